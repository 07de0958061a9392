import { handoffReason, MAX_HANDOFF_REASON_CHARS } from '../../domain/handoff-reason.js';
import type { ModelToolCall, ModelToolSpec } from '../../domain/ports/model-provider.js';
import type { ToolCallResult, ToolEffects } from '../../domain/ports/tool-dispatch.js';

/** The name of Palaver's built-in tool that hands the conversation to a person (`agent.tools: ["handoff"]`). */
export const HANDOFF_TOOL = 'handoff';

/**
 * The built-in `handoff` tool as the model sees it. Offered whatever the role allowlists say: a person who needs a
 * human must reach one in every role.
 */
export const HANDOFF_TOOL_SPEC: ModelToolSpec = {
  name: HANDOFF_TOOL,
  description:
    'Hand this conversation to a person from the team. Use it when the person asks for a human (an operator, a manager, ' +
    'a real person), or when you cannot help them yourself. After it the conversation is theirs: you will not be asked ' +
    'to answer again, and the person is told that someone will answer here. Do not announce it yourself.',
  parameters: {
    type: 'object',
    properties: {
      reason: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_HANDOFF_REASON_CHARS,
        description: 'For the team, in a sentence: what the person needs and why a person should take over.',
      },
    },
    required: ['reason'],
    additionalProperties: false,
  },
};

const offeredWith = new WeakMap<readonly ModelToolSpec[], readonly ModelToolSpec[]>();

/**
 * A role's tools with the built-in `handoff` among them (in place of a host's tool of that name). The same list for
 * the same tools, as the registry keeps them, so a provider's conversion of the list is still reused.
 */
export function withHandoffTool(specs: readonly ModelToolSpec[]): readonly ModelToolSpec[] {
  let offered = offeredWith.get(specs);
  if (offered === undefined) offeredWith.set(specs, (offered = [...specs.filter((spec) => spec.name !== HANDOFF_TOOL), HANDOFF_TOOL_SPEC]));
  return offered;
}

/**
 * Runs the built-in tool, in the core (it acts on the turn alone, so it is never dispatched, journaled or sent to a
 * worker): a reason gives the `handoff` effect, with source `model`; without one the model is told what to send.
 */
export function runHandoffTool(call: ModelToolCall, args: Readonly<Record<string, unknown>>): ToolCallResult {
  const reason = handoffReason(args['reason']);
  if (reason === undefined)
    return { callId: call.callId, content: 'handoff needs { "reason": "<why a person should take over>" }.', isError: true, effects: {}, durationMs: 0 };
  return {
    callId: call.callId,
    content: 'Handed over: a person from the team will answer here. Do not write anything more.',
    isError: false,
    effects: { handoff: { reason, source: 'model' } },
    durationMs: 0,
  };
}

/**
 * The handoff a tool other than the built-in one asked for, held to the core's rules whatever its result says (a
 * worker's answer is data from Redis): source `tool`, and a reason that is storable and bounded, else none.
 */
export function toolHandoffEffect(effects: ToolEffects): ToolEffects {
  if (effects.handoff === undefined) return effects;
  const { handoff, ...rest } = effects;
  const reason = handoffReason(handoff.reason);
  return reason === undefined ? rest : { ...rest, handoff: { reason, source: 'tool' } };
}
