import { z } from 'zod';
import type { ScriptedCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';

/**
 * A cancel tool that needs the person's yes (`approval: "person"`, described as "Cancel appointment <id>"), and the
 * runs it made, each as `<appointment id>@<idempotency key>`.
 */
export function cancellableSalon() {
  const runs: string[] = [];
  const cancel = defineTool({
    name: 'cancel_appointment',
    description: 'Cancels an appointment',
    input: z.object({ appointment_id: z.string() }),
    approval: 'person',
    describe: ({ appointment_id }) => `Cancel appointment ${appointment_id}`,
    run: ({ appointment_id }, ctx) => {
      runs.push(`${appointment_id}@${ctx.idempotencyKey}`);
      return `Appointment ${appointment_id} cancelled.`;
    },
  });
  return { runs, cancel };
}

/** A model that asks to cancel appointment a-17, then answers with what came back ("Done: <tool result>"). */
export function cancellingModel(call: ScriptedCall) {
  const result = [...call.messages].reverse().find((item) => item.type === 'tool_result') as { output?: string } | undefined;
  if (result) return { text: `Done: ${result.output}` };
  return { text: 'Let me cancel that.', toolCalls: [{ name: 'cancel_appointment', arguments: { appointment_id: 'a-17' } }] };
}
