import type { ModelScript, ScriptedReply } from '../models/scripted/scripted-model.js';

/**
 * The benchmark's model: the first call asks for `lookup` with `{"id": 1}`; once a tool result arrives it answers
 * with a short text. Deterministic, so runs are comparable.
 */
export const benchScript: ModelScript = (call): ScriptedReply => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: `Lookup done: ${last.output.slice(0, 40)}` };
  return { toolCalls: [{ name: 'lookup', arguments: { id: 1 } }] };
};
