import type { NewMessage } from '../../domain/model.js';
import type { FlowState } from '../../domain/ports/flow.js';
import type { HostedToolCall, ModelToolCall } from '../../domain/ports/model-provider.js';
import type { ToolCallResult } from '../../domain/ports/tool-dispatch.js';
import type { ToolRun, TurnScope } from '../turn/turn-context.js';
import { HANDOFF_TOOL, runHandoffTool, toolHandoffEffect } from './handoff-tool.js';
import { toolProgressLabel } from './tool-label.js';

/**
 * Runs one tool call the model asked for, by the core's rules: the arguments must be a JSON object, a tool outside
 * the role's allowlist is refused, the call goes to the dispatcher as data for the user the server bound to the
 * turn, and the configured role tool turns into a role effect when it succeeds. The built-in `handoff` tool (when
 * `agent.tools` has it) runs here, in the core, for every role. A call id the model repeats within
 * the turn gets the first call's result and does not run again, and a call that finished before a crash is not run
 * again when the turn resumes (its result comes from the turn's journal). Never throws for the tool's own failure:
 * the model receives it as a tool error.
 */
export async function runToolCall(scope: TurnScope, call: ModelToolCall, role: string | null, state: FlowState): Promise<ToolCallResult> {
  const label = toolProgressLabel(scope.deps.tools.labelOf(call.name), scope.interfaceLanguage);
  scope.progress({ type: 'tool_call', callId: call.callId, name: call.name, arguments: call.arguments, label });

  const { journal } = scope;
  const earlier = journal.toolRuns.get(call.callId);
  const result = earlier?.result ?? (await dispatch(scope, call, role, state));
  if (!earlier) journal.toolRuns.set(call.callId, { call, result });

  scope.progress({ type: 'tool_result', callId: call.callId, name: call.name, content: result.content, isError: result.isError });
  return result;
}

async function dispatch(scope: TurnScope, call: ModelToolCall, role: string | null, state: FlowState): Promise<ToolCallResult> {
  const { deps } = scope;
  const args = parseArguments(call.arguments);
  if (!args) return refusal(call, `Arguments for ${call.name} must be a JSON object.`);
  if (call.name === HANDOFF_TOOL && deps.agent.handoff?.tool === true) return runHandoffTool(call, args);
  const offered = await deps.tools.toolsFor(role);
  // A tool outside the role's allowlist is refused even if the model names it.
  if (!offered.has(call.name)) return refusal(call, `Tool ${call.name} is not available${role ? ` to role ${role}` : ''}.`);
  // A call that needs someone's yes runs only once they said it (the turn waits for it in between).
  const unapproved = approvalStep(scope, call, args, role);
  if (unapproved !== undefined) return unapproved;

  const dispatched = await dispatchOnce(scope, call, {
    request: {
      callId: call.callId,
      idempotencyKey: scope.journal.idempotencyKey(call.callId),
      tool: call.name,
      arguments: args,
      userId: scope.user.id,
      accounts: scope.accounts,
      sessionId: scope.session.id,
      conversationId: scope.session.conversationId,
      correlationId: scope.correlationId,
      role,
      flowState: state.flows,
    },
    signal: scope.signal,
  });
  const result = { ...dispatched, effects: toolHandoffEffect(dispatched.effects) };
  // The configured role tool (e.g. an MCP `set_role`) changes the role when it succeeds.
  const requested = args[deps.agent.roleArgument];
  if (!result.isError && result.effects.role === undefined && call.name === deps.agent.setRoleTool && typeof requested === 'string') {
    return checkedRoleEffect(scope, call, { ...result, effects: { ...result.effects, role: requested } });
  }
  return checkedRoleEffect(scope, call, result);
}

/**
 * A role change, from the role tool's argument or from a result's effects (`ctx.setRole`, or a worker's answer read
 * from Redis), is held to one rule before the flow applies it: a configured role whose allowlist names the tool
 * (`ToolRegistry.mayGrantRole`). Any other is dropped, and logged.
 */
function checkedRoleEffect(scope: TurnScope, call: ModelToolCall, result: ToolCallResult): ToolCallResult {
  const { role, ...effects } = result.effects;
  if (role === undefined || scope.deps.tools.mayGrantRole(call.name, role)) return result;
  scope.deps.logger.warn(
    { correlationId: scope.correlationId, tool: call.name, toolCallId: call.callId, role },
    'tool result asked for a role the tool may not grant; ignored',
  );
  return { ...result, effects };
}

/**
 * Dispatches a call once per turn, across a crash: a call the journal holds as finished returns its recorded result
 * without running; any other is recorded as running before it goes out (with the model call that asked for it) and
 * with its result when it comes back. A call cut off while running goes out again, under the same idempotency key.
 * A read-only tool's call is recorded only with its result: cut off, it changed nothing, and the model is asked again.
 */
async function dispatchOnce(scope: TurnScope, call: ModelToolCall, dispatchCall: Parameters<TurnScope['deps']['dispatchTool']>[0]): Promise<ToolCallResult> {
  const { journal } = scope;
  const finished = journal.finishedToolCall(call.callId);
  if (finished) return finished;
  // A dispatcher that records the call (streams: with its outbox entry) saves the journal's own commit here.
  const recordedFirst = !scope.deps.tools.isReadOnly(call.name);
  if (scope.deps.dispatchRecordsCalls) await journal.confirmOwnership();
  else if (recordedFirst) await journal.toolStarted(call);
  const result = await scope.deps.dispatchTool(dispatchCall);
  await journal.toolFinished(call, result, { started: recordedFirst || scope.deps.dispatchRecordsCalls === true });
  return result;
}

/**
 * Where a call that needs approval stands: undefined when it may run (approved, or no approval needed), else the
 * result the model gets instead — declined, expired, or (the call now asked about) a note that it waits, while the
 * turn ends after this round. One call is asked at a time: another that needs approval in the same round is not run
 * now, and is asked about when the turn resumes after the first one's decision and comes to it again.
 */
function approvalStep(scope: TurnScope, call: ModelToolCall, args: Record<string, unknown>, role: string | null): ToolCallResult | undefined {
  const { journal, session } = scope;
  const requirement = scope.deps.tools.approvalOf(call.name, args, {
    userId: scope.user.id,
    sessionId: session.id,
    conversationId: session.conversationId,
    role,
  });
  if (requirement === undefined) return undefined;
  const decided = journal.approvalOf(call.callId);
  if (decided?.status === 'approved') return undefined;
  const who = decided?.by === 'operator' ? 'our team' : 'the person';
  if (decided?.status === 'declined')
    return refusal(call, `Declined by ${who}${decided.reason ? ` (${decided.reason})` : ''}: ${call.name} was not run. Do not try it again unless they ask.`);
  if (decided?.status === 'expired') return refusal(call, `Not approved in time: ${call.name} was not run. Tell them, and offer to try again.`);
  if (journal.asking !== undefined && journal.asking.call.callId !== call.callId)
    return refusal(call, 'Not run yet: another action of this turn waits for approval first.');
  journal.ask({ call, requirement });
  return { callId: call.callId, content: `Waiting for ${who} to approve ${call.name}.`, isError: false, effects: {}, durationMs: 0 };
}

function refusal(call: ModelToolCall, content: string): ToolCallResult {
  return { callId: call.callId, content, isError: true, effects: {}, durationMs: 0 };
}

function parseArguments(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = text.trim() ? JSON.parse(text) : {};
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Tool traffic, kept for audit and never shown to the person or sent back as history: one record per call, with
 * its arguments, result, outcome and (for calls that ran) how long it took; refusals by a limit are marked.
 */
export function toolAuditRecords(
  runs: readonly (ToolRun & { readonly refused?: boolean })[],
  hosted: readonly HostedToolCall[],
  correlationId: string,
): NewMessage[] {
  return [
    ...runs.map(({ call, result, refused }) => ({
      role: 'tool' as const,
      audience: 'audit' as const,
      content: result.content,
      toolCallId: call.callId,
      toolCalls: [{ callId: call.callId, name: call.name, arguments: call.arguments }],
      correlationId,
      meta: { isError: result.isError, refused: refused === true, ...(refused ? {} : { durationMs: result.durationMs }) },
    })),
    ...hosted.map((call) => ({
      role: 'tool' as const,
      audience: 'audit' as const,
      content: call.error ?? call.output ?? '',
      toolCalls: [{ callId: `${call.serverLabel}:${call.name}`, name: call.name, arguments: call.arguments }],
      correlationId,
      meta: { hosted: true, serverLabel: call.serverLabel, isError: call.error !== null },
    })),
  ];
}
