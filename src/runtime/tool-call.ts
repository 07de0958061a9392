import type { ModelToolCall } from '../domain/ports/model-provider.js';
import type { ToolCallContext, ToolResult } from '../domain/ports/tool-host.js';
import type { ToolSet } from '../tools/tool-registry.js';
import { rememberToolCalls } from './context/user-state.js';
import type { TurnScope } from './turn-context.js';

/**
 * Runs one tool call the model asked for: parses its arguments, calls it for the user bound to the turn, applies
 * the flow-state and role changes it makes, and reports it to the channel. The turn's audit records keep it.
 * A call id the model repeats within the turn gets the first call's result and does not run again.
 * Never throws for the tool's own failure: the model receives it as a tool error.
 */
export async function runToolCall(scope: TurnScope, tools: ToolSet, role: string | null, call: ModelToolCall, onRoleChange: (role: string) => void): Promise<ToolResult> {
  const { deps, emit } = scope;
  // A tool acts only for a message that is stored (it may still be being written during the first model call).
  await scope.newMessagesStored;
  emit({ type: 'tool_call', callId: call.callId, name: call.name, arguments: call.arguments });

  let result: ToolResult;
  const earlier = scope.toolRuns.get(call.callId);
  if (earlier) {
    result = earlier.result;
  } else {
    const started = performance.now();
    const args = parseArguments(call.arguments);
    result = args
      ? await invokeForBoundUser(scope, tools, role, call, args, onRoleChange)
      : { content: `Arguments for ${call.name} must be a JSON object.`, isError: true };
    scope.toolRuns.set(call.callId, { result, durationMs: Math.round((performance.now() - started) * 1000) / 1000 });
  }

  scope.state = rememberToolCalls(scope.state, [{ name: call.name, arguments: call.arguments, ok: !result.isError, at: deps.now().toISOString() }]);
  deps.metrics.toolCalls.inc({ tool: call.name, outcome: result.isError ? 'error' : 'ok' });
  emit({ type: 'tool_result', callId: call.callId, name: call.name, content: result.content, isError: result.isError });
  return result;
}

async function invokeForBoundUser(
  scope: TurnScope,
  tools: ToolSet,
  role: string | null,
  call: ModelToolCall,
  args: Record<string, unknown>,
  onRoleChange: (role: string) => void,
): Promise<ToolResult> {
  const { deps, request } = scope;
  let flows = { ...scope.state.flows };
  const ctx: ToolCallContext = {
    userId: request.user.id,
    sessionId: request.session.id,
    conversationId: request.session.conversationId,
    correlationId: request.correlationId,
    callId: call.callId,
    // The turn's own signal: a tool can listen to it, but only the turn's owner can abort it. Without one, a signal
    // of the call's own, so listeners a tool leaves behind go with the call.
    signal: request.signal ?? new AbortController().signal,
    role,
    setRole: onRoleChange,
    getFlowState: (namespace) => flows[namespace],
    setFlowState: (namespace, value) => {
      flows = { ...flows };
      if (value === undefined) delete flows[namespace];
      else flows[namespace] = value;
    },
  };
  const result = await tools.call(call.name, args, ctx);
  scope.state = { ...scope.state, flows };
  // The configured role tool (e.g. an MCP `set_role`) changes the role when it succeeds.
  const requestedRole = args[deps.agent.roleArgument];
  if (!result.isError && call.name === deps.agent.setRoleTool && typeof requestedRole === 'string') {
    if (deps.agent.roleNames.length === 0 || deps.agent.roleNames.includes(requestedRole)) onRoleChange(requestedRole);
  }
  return result;
}

function parseArguments(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = text.trim() ? JSON.parse(text) : {};
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
