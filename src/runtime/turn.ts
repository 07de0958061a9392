import type { Session, StoredMessage, User } from '../domain/model.js';
import type { TurnEvent, TurnOutcome } from '../domain/ports/channel.js';
import type { HostedMcpSpec, HostedToolCall, ModelInputItem, ModelToolCall } from '../domain/ports/model-provider.js';
import type { Store } from '../domain/ports/store.js';
import type { ToolCallContext, ToolResult } from '../domain/ports/tool-host.js';
import { ModelError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { costOf, sumCosts, type PriceTable } from '../billing/pricing.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { apologyFor } from './apology.js';
import { historyToInput } from './context/history.js';
import { composeInstructions, type InstructionLibrary } from './context/instructions.js';
import { parseUserState, rememberToolCalls, type UserState } from './context/user-state.js';
import { runAgentLoop, type AgentLoopResult, type ExecutedToolCall } from './flows/agent-loop.js';
import { createModelCaller, type ModelSet } from './model-policy.js';

/** Agent settings a turn needs, taken from config once. */
export interface AgentSettings {
  readonly defaultRole: string | null;
  readonly historyLimit: number;
  readonly maxToolRounds: number;
  readonly maxToolCallsPerTurn: number;
  readonly maxCallsPerTool: number;
  readonly defaultTimeZone: string;
  readonly defaultLanguage: string;
  readonly roleNames: readonly string[];
  readonly setRoleTool: string;
  readonly roleArgument: string;
}

/** Everything a turn uses, handed in by the composition root. */
export interface TurnDependencies {
  readonly store: Store;
  readonly models: ModelSet;
  readonly tools: ToolRegistry;
  readonly hostedMcp: readonly HostedMcpSpec[];
  readonly instructions: InstructionLibrary;
  readonly agent: AgentSettings;
  readonly prices: PriceTable;
  readonly currency: string;
  /** Global limit on model calls running at once. */
  readonly limitModelCalls: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  readonly now: () => Date;
}

/** One turn: the new (already persisted) user messages of a conversation, answered together. */
export interface TurnRequest {
  readonly user: User;
  readonly session: Session;
  readonly newMessages: readonly StoredMessage[];
  readonly correlationId: string;
  readonly language: string;
  readonly timeZone: string;
  readonly onEvent?: (event: TurnEvent) => void;
  readonly signal?: AbortSignal;
}

/**
 * Runs one turn: load context, run the agent loop (re-running once if a tool changed the role), persist,
 * and return the reply. A failure is logged with the correlation id and answered with a short apology.
 */
export async function runTurn(deps: TurnDependencies, request: TurnRequest): Promise<TurnOutcome> {
  const log = deps.logger.child({ correlationId: request.correlationId, sessionId: request.session.id, userId: request.user.id });
  const replyMessageId = newId();
  const emit = request.onEvent ?? (() => {});
  emit({ type: 'turn_started', correlationId: request.correlationId, sessionId: request.session.id });

  const stateRecord = await deps.store.userState.get(request.user.id);
  const { state: loadedState, problem } = parseUserState(stateRecord?.raw);
  if (problem) log.warn({ problem }, 'user state unreadable; continuing with an empty state');
  let state: UserState = loadedState;

  try {
    const history = await deps.store.messages.listRecent(request.session.id, {
      limit: deps.agent.historyLimit + request.newMessages.length,
      audience: 'display',
    });
    const transcript = historyToInput(history);
    const newItems = historyToInput(request.newMessages);

    let role = state.role ?? deps.agent.defaultRole;
    let result: AgentLoopResult | undefined;
    const executed: ExecutedToolCall[] = [];
    const hosted: HostedToolCall[] = [];
    const calls: AgentLoopResult['modelCalls'][number][] = [];
    /** Failed model attempts (path and reason), recorded on the reply beside the calls that succeeded. */
    const failures: { path: string; failure: string }[] = [];
    // At most one re-run: a tool that changes the role re-runs the turn under the new role's instructions and tools.
    for (let attempt = 0; attempt < 2; attempt++) {
      const roleChange: { to?: string } = {};
      const tools = await deps.tools.toolsFor(role, (host, error) => log.warn({ host, err: error }, 'tool host unavailable'));
      const chained = deps.models.primary.capabilities.responseChains && state.lastResponseId !== null && tools.specs.length > 0;
      result = await runAgentLoop({
        instructions: composeInstructions(deps.instructions, role, { now: deps.now(), timeZone: request.timeZone, language: request.language, displayName: request.user.displayName }, state),
        transcript,
        newItems,
        previousResponseId: chained ? state.lastResponseId! : undefined,
        tools,
        hostedMcp: deps.hostedMcp,
        maxRounds: deps.agent.maxToolRounds,
        maxToolCalls: deps.agent.maxToolCallsPerTurn - executed.length,
        maxCallsPerTool: deps.agent.maxCallsPerTool,
        callModel: createModelCaller({
          models: deps.models,
          limit: deps.limitModelCalls,
          toolsAvailable: tools.specs.length > 0 || deps.hostedMcp.length > 0,
          onFailure: (error, path) => {
            failures.push({ path, failure: error instanceof ModelError ? error.failure : 'error' });
            deps.metrics.modelFailures.inc({ path });
            log.warn({ err: error, path }, 'model call failed');
          },
        }),
        runTool: async (call) => {
          const outcome = await runToolCall(deps, request, role, state, call, (next) => (state = next), (to) => (roleChange.to = to), tools.call, emit);
          return outcome;
        },
        shouldStop: () => attempt === 0 && roleChange.to !== undefined && roleChange.to !== role,
        onLimit: (limit, tool) => {
          deps.metrics.toolLimits.inc({ limit });
          log.warn({ limit, tool }, 'tool limit reached');
        },
        ...(request.onEvent ? { onTextDelta: (delta: string) => emit({ type: 'text_delta', messageId: replyMessageId, delta }) } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
        correlationId: request.correlationId,
      });
      executed.push(...result.toolCalls);
      hosted.push(...result.hostedToolCalls);
      calls.push(...result.modelCalls);
      if (roleChange.to !== undefined && roleChange.to !== role) {
        log.info({ from: role, to: roleChange.to }, 'role changed by tool');
        role = roleChange.to;
        // A new role starts a new chain: the old one carries the old role's instructions and tools.
        state = { ...state, role, lastResponseId: null };
        if (result.stopped) continue;
      }
      break;
    }

    const finalResult = result!;
    const text = finalResult.text.trim();
    const lastCall = calls[calls.length - 1];
    // Chains continue only from a successful primary call that had tools; a fallback or tool-less answer clears it.
    const keepsChain = lastCall !== undefined && !lastCall.fallback && lastCall.path !== 'no_tools' && finalResult.responseId !== undefined;
    state = { ...state, role, lastResponseId: keepsChain ? finalResult.responseId! : null };
    state = rememberToolCalls(state, hosted.map((call) => ({ name: `${call.serverLabel}.${call.name}`, arguments: call.arguments, ok: call.error === null, at: deps.now().toISOString() })));
    if (!text) {
      log.error({ models: calls.map((call) => call.model) }, 'model returned no text; sending an apology instead');
      return await finishFailed(deps, request, state, replyMessageId, calls, emit);
    }

    const usage = totalUsage(deps, calls);
    await deps.store.transaction(async (tx) => {
      await tx.messages.append(request.session.id, [
        ...executed.map((call) => ({
          role: 'tool' as const,
          audience: 'audit' as const,
          content: call.result.content,
          toolCallId: call.callId,
          toolCalls: [{ callId: call.callId, name: call.name, arguments: call.arguments }],
          correlationId: request.correlationId,
          meta: { isError: call.result.isError, refused: call.refused },
        })),
        ...hosted.map((call) => ({
          role: 'tool' as const,
          audience: 'audit' as const,
          content: call.error ?? call.output ?? '',
          toolCalls: [{ callId: `${call.serverLabel}:${call.name}`, name: call.name, arguments: call.arguments }],
          correlationId: request.correlationId,
          meta: { hosted: true, serverLabel: call.serverLabel, isError: call.error !== null },
        })),
        {
          role: 'assistant',
          audience: 'display',
          content: text,
          model: lastCall?.model ?? deps.models.primary.model,
          inputTokens: usage.inputTokens,
          outputTokens: usage.outputTokens,
          cost: usage.cost,
          currency: deps.currency,
          correlationId: request.correlationId,
          meta: { fallback: calls.some((call) => call.fallback), paths: calls.map((call) => call.path), models: [...new Set(calls.map((call) => call.model))], ...(failures.length > 0 ? { failures } : {}) },
        },
      ]);
      await tx.sessions.addUsage(request.session.id, { ...usage, currency: deps.currency });
      await tx.sessions.setStatus(request.session.id, 'completed');
      await tx.userState.save(request.user.id, state);
    });
    recordUsageMetrics(deps, calls);
    deps.metrics.turns.inc({ status: 'completed' });
    emit({ type: 'reply', messageId: replyMessageId, text });
    return { correlationId: request.correlationId, sessionId: request.session.id, userId: request.user.id, reply: text, replyMessageId, status: 'completed', usage: { ...usage, currency: deps.currency } };
  } catch (error) {
    log.error({ err: error }, 'turn failed');
    return finishFailed(deps, request, state, replyMessageId, [], emit);
  }
}

/** Runs one tool call for the bound user, recording it for idempotency and in the user's recent calls. */
async function runToolCall(
  deps: TurnDependencies,
  request: TurnRequest,
  role: string | null,
  state: UserState,
  call: ModelToolCall,
  setState: (state: UserState) => void,
  setRole: (role: string) => void,
  invoke: (name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext) => Promise<ToolResult>,
  emit: (event: TurnEvent) => void,
): Promise<ToolResult> {
  emit({ type: 'tool_call', callId: call.callId, name: call.name, arguments: call.arguments });
  // Model call ids are unique only within a response; scope the idempotency key to the turn.
  const recordId = `${request.correlationId}:${call.callId}`;
  let args: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = call.arguments.trim() ? JSON.parse(call.arguments) : {};
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
  } catch {
    // handled below
  }
  let result: ToolResult;
  const started = await deps.store.toolCalls.start({ callId: recordId, sessionId: request.session.id, userId: request.user.id, correlationId: request.correlationId, name: call.name, arguments: call.arguments });
  if (!started) {
    const previous = await deps.store.toolCalls.findByCallId(recordId);
    result = { content: previous?.result ?? 'This tool call was already made.', isError: previous?.status !== 'succeeded' };
  } else if (!args) {
    result = { content: `Arguments for ${call.name} must be a JSON object.`, isError: true };
  } else {
    let flows = { ...state.flows };
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    const ctx: ToolCallContext = {
      userId: request.user.id,
      sessionId: request.session.id,
      conversationId: request.session.conversationId,
      correlationId: request.correlationId,
      callId: call.callId,
      signal: controller.signal,
      role,
      setRole,
      getFlowState: (namespace) => flows[namespace],
      setFlowState: (namespace, value) => {
        flows = { ...flows };
        if (value === undefined) delete flows[namespace];
        else flows[namespace] = value;
      },
    };
    try {
      result = await invoke(call.name, args, ctx);
    } finally {
      request.signal?.removeEventListener('abort', onAbort);
    }
    state = { ...state, flows };
    const requestedRole = args[deps.agent.roleArgument];
    if (!result.isError && call.name === deps.agent.setRoleTool && typeof requestedRole === 'string') {
      if (deps.agent.roleNames.length === 0 || deps.agent.roleNames.includes(requestedRole)) setRole(requestedRole);
    }
  }
  if (started) await deps.store.toolCalls.finish(recordId, { status: result.isError ? 'failed' : 'succeeded', result: result.content });
  setState(rememberToolCalls(state, [{ name: call.name, arguments: call.arguments, ok: !result.isError, at: deps.now().toISOString() }]));
  deps.metrics.toolCalls.inc({ tool: call.name, outcome: result.isError ? 'error' : 'ok' });
  emit({ type: 'tool_result', callId: call.callId, name: call.name, content: result.content, isError: result.isError });
  return result;
}

/** Persists an apology as the reply and marks the session failed. Never throws. */
async function finishFailed(
  deps: TurnDependencies,
  request: TurnRequest,
  state: UserState,
  replyMessageId: string,
  calls: AgentLoopResult['modelCalls'],
  emit: (event: TurnEvent) => void,
): Promise<TurnOutcome> {
  const apology = apologyFor(request.language);
  const usage = totalUsage(deps, calls);
  try {
    await deps.store.transaction(async (tx) => {
      await tx.messages.append(request.session.id, [
        { role: 'assistant', audience: 'display', content: apology, correlationId: request.correlationId, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cost: usage.cost, currency: deps.currency, meta: { error: true } },
      ]);
      if (calls.length > 0) await tx.sessions.addUsage(request.session.id, { ...usage, currency: deps.currency });
      await tx.sessions.setStatus(request.session.id, 'failed');
      await tx.userState.save(request.user.id, { ...state, lastResponseId: null });
    });
  } catch (error) {
    deps.logger.error({ err: error, correlationId: request.correlationId }, 'could not persist the failed turn');
  }
  deps.metrics.turns.inc({ status: 'failed' });
  emit({ type: 'reply', messageId: replyMessageId, text: apology });
  return { correlationId: request.correlationId, sessionId: request.session.id, userId: request.user.id, reply: apology, replyMessageId, status: 'failed', usage: { ...usage, currency: deps.currency } };
}

function totalUsage(deps: TurnDependencies, calls: AgentLoopResult['modelCalls']) {
  return {
    inputTokens: calls.reduce((sum, call) => sum + call.usage.inputTokens, 0),
    outputTokens: calls.reduce((sum, call) => sum + call.usage.outputTokens, 0),
    cost: sumCosts(calls.map((call) => costOf(deps.prices, call.model, call.usage))),
  };
}

function recordUsageMetrics(deps: TurnDependencies, calls: AgentLoopResult['modelCalls']): void {
  for (const call of calls) {
    deps.metrics.modelCalls.inc({ model: call.model, path: call.path });
    deps.metrics.tokens.inc({ direction: 'input' }, call.usage.inputTokens);
    deps.metrics.tokens.inc({ direction: 'output' }, call.usage.outputTokens);
  }
}

export type { ModelInputItem };
