import { ModelError } from '../../domain/errors.js';
import type { HostedToolCall, ModelInputItem } from '../../domain/ports/model-provider.js';
import { composeInstructions } from '../context/instructions.js';
import { createModelCaller } from '../model-policy.js';
import { runToolCall } from '../tool-call.js';
import type { TurnScope } from '../turn-context.js';
import { runAgentLoop, type ExecutedToolCall, type ModelCallRecord } from './agent-loop.js';

/** What a flow produced, ready to be persisted. */
export interface FlowResult {
  readonly text: string;
  readonly role: string | null;
  readonly modelCalls: readonly ModelCallRecord[];
  readonly toolCalls: readonly ExecutedToolCall[];
  readonly hostedToolCalls: readonly HostedToolCall[];
  /** Failed model attempts (path and reason), recorded beside the calls that answered. */
  readonly failures: readonly { path: string; failure: string }[];
  /** Response id to continue the Responses chain from next turn, or null to clear it. */
  readonly chainId: string | null;
  /** A tool changed the role during the turn. */
  readonly roleChanged: boolean;
}

/**
 * The single-agent flow: one agent loop under the user's role. When a tool changes the role, the loop stops after
 * that round and runs once more under the new role's instructions and tools, on a fresh chain (at most once).
 */
export async function runSingleFlow(scope: TurnScope, transcript: readonly ModelInputItem[], newItems: readonly ModelInputItem[]): Promise<FlowResult> {
  // scope.log is made on first use, so it is read only where something is logged.
  const { deps, request, emit } = scope;
  const initialRole = scope.state.role ?? deps.agent.defaultRole;
  let role = initialRole;
  const modelCalls: ModelCallRecord[] = [];
  const toolCalls: ExecutedToolCall[] = [];
  const hostedToolCalls: HostedToolCall[] = [];
  const failures: { path: string; failure: string }[] = [];
  const callModel = (toolsAvailable: boolean) =>
    createModelCaller({
      models: deps.models,
      limit: deps.limitModelCalls,
      toolsAvailable,
      onFailure: (error, path) => {
        failures.push({ path, failure: error instanceof ModelError ? error.failure : 'error' });
        deps.metrics.modelFailures.inc({ path });
        scope.log.warn({ err: error, path }, 'model call failed');
      },
    });

  for (let attempt = 0; ; attempt++) {
    let newRole: string | undefined;
    const tools = await deps.tools.toolsFor(role, (host, error) => scope.log.warn({ host, err: error }, 'tool host unavailable'));
    const chainId = deps.models.primary.capabilities.responseChains && tools.specs.length > 0 ? scope.state.lastResponseId : null;
    const result = await runAgentLoop({
      instructions: composeInstructions(deps.instructions, role, { now: deps.now(), timeZone: request.timeZone, language: request.language, displayName: request.user.displayName }, scope.state),
      transcript,
      newItems,
      previousResponseId: chainId ?? undefined,
      tools,
      hostedMcp: deps.hostedMcp,
      maxRounds: deps.agent.maxToolRounds,
      maxToolCalls: deps.agent.maxToolCallsPerTurn - toolCalls.length,
      maxCallsPerTool: deps.agent.maxCallsPerTool,
      callModel: callModel(tools.specs.length > 0 || deps.hostedMcp.length > 0),
      runTool: (call) => runToolCall(scope, tools, role, call, (to) => (newRole = to)),
      shouldStop: () => attempt === 0 && newRole !== undefined && newRole !== role,
      onLimit: (limit, tool) => {
        deps.metrics.toolLimits.inc({ limit });
        scope.log.warn({ limit, tool }, 'tool limit reached');
      },
      ...(request.onEvent ? { onTextDelta: (delta: string) => emit({ type: 'text_delta', messageId: scope.replyMessageId, delta }) } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
      correlationId: request.correlationId,
    });
    modelCalls.push(...result.modelCalls);
    toolCalls.push(...result.toolCalls);
    hostedToolCalls.push(...result.hostedToolCalls);

    if (newRole !== undefined && newRole !== role) {
      scope.log.info({ from: role, to: newRole }, 'role changed by tool');
      role = newRole;
      // A new role starts a new chain: the old one carries the old role's instructions and tools.
      scope.state = { ...scope.state, role, lastResponseId: null };
      if (result.stopped) continue;
    }

    const last = modelCalls[modelCalls.length - 1];
    // A chain continues only from a successful primary call that had tools; a fallback or tool-less answer clears it.
    const keepsChain = last !== undefined && !last.fallback && last.path !== 'no_tools' && result.responseId !== undefined;
    return { text: result.text, role, modelCalls, toolCalls, hostedToolCalls, failures, chainId: keepsChain ? result.responseId! : null, roleChanged: role !== initialRole };
  }
}
