import type { NewMessage, StoredMessage } from '../domain/model.js';
import type { Store } from '../domain/ports/store.js';
import { costOf, sumCosts } from '../billing/pricing.js';
import type { ModelCallRecord } from './flows/agent-loop.js';
import type { FlowResult } from './flows/single-flow.js';
import type { TurnDependencies, TurnScope } from './turn-context.js';

export interface TurnUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Decimal string in the configured currency. */
  readonly cost: string;
}

/**
 * Stores a completed turn in one transaction: audit records of every tool call, the reply with its usage, cost and
 * model path, the session totals and status, and the user's state.
 */
export async function persistReply(scope: TurnScope, flow: FlowResult, text: string, earlier: readonly StoredMessage[]): Promise<TurnUsage> {
  const { deps, request } = scope;
  const newMessages = await scope.newMessagesStored;
  const usage = usageOf(deps, flow.modelCalls);
  const last = flow.modelCalls[flow.modelCalls.length - 1];
  const reply: NewMessage = {
    role: 'assistant',
    audience: 'display',
    content: text,
    model: last?.model ?? deps.models.primary.model,
    ...usage,
    currency: deps.currency,
    correlationId: request.correlationId,
    meta: {
      fallback: flow.modelCalls.some((call) => call.fallback),
      paths: flow.modelCalls.map((call) => call.path),
      models: [...new Set(flow.modelCalls.map((call) => call.model))],
      ...(flow.failures.length > 0 ? { failures: flow.failures } : {}),
    },
  };
  const { stored, version } = await deps.store.transaction(async (tx) => {
    const stored = await tx.messages.append(request.session.id, [...auditRecords(scope, flow), reply], { status: 'completed', usage: { ...usage, currency: deps.currency } });
    return { stored, version: await saveState(scope, tx) };
  }, request.commit);
  deps.cache.rememberState(request.user.id, { version, state: scope.state });
  // A role change resets the cached history (as the chain): the next turn reads it afresh from the store.
  if (flow.roleChanged) deps.cache.forgetHistory(request.session.id);
  else deps.cache.rememberHistory(request.session.id, [...earlier, ...newMessages, ...stored]);
  for (const call of flow.modelCalls) {
    deps.metrics.modelCalls.inc({ model: call.model, path: call.path });
    deps.metrics.tokens.inc({ direction: 'input' }, call.usage.inputTokens);
    deps.metrics.tokens.inc({ direction: 'output' }, call.usage.outputTokens);
  }
  return usage;
}

/**
 * Saves the user's state if nobody else changed it since it was loaded. Another process may have (a second
 * Palaver on the same database): the turn's state still wins, as the newest, and the overwrite is logged.
 */
async function saveState(scope: TurnScope, tx: Store): Promise<number> {
  const { request } = scope;
  const version = await tx.userState.save(request.user.id, scope.state, scope.stateVersion);
  if (version !== false) return version;
  scope.log.warn({ expectedVersion: scope.stateVersion }, 'user state changed elsewhere during the turn; saving this turn\'s state over it');
  return (await tx.userState.save(request.user.id, scope.state)) as number;
}

/** Stores an apology as the reply and marks the session failed. Never throws: the person still gets the apology. */
export async function persistFailure(scope: TurnScope, apology: string, modelCalls: readonly ModelCallRecord[]): Promise<TurnUsage> {
  const { deps, request } = scope;
  const usage = usageOf(deps, modelCalls);
  try {
    await deps.store.transaction(async (tx) => {
      await tx.messages.append(
        request.session.id,
        [{ role: 'assistant', audience: 'display', content: apology, correlationId: request.correlationId, ...usage, currency: deps.currency, meta: { error: true } }],
        { status: 'failed', ...(modelCalls.length > 0 ? { usage: { ...usage, currency: deps.currency } } : {}) },
      );
      await tx.userState.save(request.user.id, { ...scope.state, lastResponseId: null });
    }, request.commit);
  } catch (error) {
    scope.log.error({ err: error }, 'could not persist the failed turn');
  }
  return usage;
}

/**
 * Tool traffic, kept for audit and never shown to the person or sent back as history: one record per call, with
 * its arguments, result, outcome and (for calls that ran) how long it took.
 */
function auditRecords(scope: TurnScope, flow: FlowResult): NewMessage[] {
  const correlationId = scope.request.correlationId;
  return [
    ...flow.toolCalls.map((call) => {
      const durationMs = call.refused ? undefined : scope.toolRuns.get(call.callId)?.durationMs;
      return {
        role: 'tool' as const,
        audience: 'audit' as const,
        content: call.result.content,
        toolCallId: call.callId,
        toolCalls: [{ callId: call.callId, name: call.name, arguments: call.arguments }],
        correlationId,
        meta: { isError: call.result.isError, refused: call.refused, ...(durationMs === undefined ? {} : { durationMs }) },
      };
    }),
    ...flow.hostedToolCalls.map((call) => ({
      role: 'tool' as const,
      audience: 'audit' as const,
      content: call.error ?? call.output ?? '',
      toolCalls: [{ callId: `${call.serverLabel}:${call.name}`, name: call.name, arguments: call.arguments }],
      correlationId,
      meta: { hosted: true, serverLabel: call.serverLabel, isError: call.error !== null },
    })),
  ];
}

function usageOf(deps: TurnDependencies, calls: readonly ModelCallRecord[]): TurnUsage {
  return {
    inputTokens: calls.reduce((sum, call) => sum + call.usage.inputTokens, 0),
    outputTokens: calls.reduce((sum, call) => sum + call.usage.outputTokens, 0),
    cost: sumCosts(calls.map((call) => costOf(deps.prices, call.model, call.usage))),
  };
}
