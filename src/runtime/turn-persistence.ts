import type { NewMessage, StoredMessage } from '../domain/model.js';
import type { TurnOutcome } from '../domain/ports/channel.js';
import type { FlowResult, ModelCallRecord } from '../domain/ports/flow.js';
import type { DeliveryRecord, Store } from '../domain/ports/store.js';
import { costOf, sumCosts } from '../domain/money.js';
import { systemText } from '../i18n/index.js';
import type { UserState } from './context/user-state.js';
import type { ModelFailures } from './flow-context.js';
import { splitReply } from './reply.js';
import { toolAuditRecords } from './tools/tool-call.js';
import type { Answer } from './delivery.js';
import type { TurnScope } from './turn-context.js';

/**
 * Stores a completed turn in one transaction: the flow's audit records, the reply with its usage, cost and model
 * path, the session totals and status, and the user's state. Resolves with the answer to deliver.
 */
export async function persistReply(scope: TurnScope, flow: FlowResult, text: string, parts: readonly string[], failures: ModelFailures, earlier: readonly StoredMessage[]): Promise<Answer> {
  const { deps } = scope;
  const usage = usageOf(scope, flow.modelCalls);
  const last = flow.modelCalls[flow.modelCalls.length - 1];
  const reply: NewMessage = {
    id: scope.replyMessageId,
    role: 'assistant',
    audience: 'display',
    content: text,
    model: last?.model ?? deps.models.primary.model,
    ...usage,
    currency: deps.currency,
    correlationId: scope.correlationId,
    meta: {
      fallback: flow.modelCalls.some((call) => call.fallback),
      paths: flow.modelCalls.map((call) => call.path),
      models: [...new Set(flow.modelCalls.map((call) => call.model))],
      ...(failures.length > 0 ? { failures } : {}),
    },
  };
  const { stored, version, deliveries } = await deps.store.transaction(async (tx) => {
    // The new messages join the conversation with their answer, in the order the model saw them.
    const stored = await tx.messages.append(scope.session.id, [...newMessages(scope), ...flow.audit, reply], { status: 'completed', usage: { ...usage, currency: deps.currency } });
    await markAnswered(scope, tx, stored);
    return { stored, version: await saveState(scope, tx, flow.state), deliveries: await addToOutbox(scope, tx, stored, parts) };
  });
  deps.cache.rememberState(scope.user.id, { version, state: flow.state });
  // A role change resets the cached history (as the chain): the next turn reads it afresh from the store.
  if (flow.state.role !== (scope.initialState.role ?? deps.agent.defaultRole)) deps.cache.forgetHistory(scope.session.id);
  else deps.cache.rememberHistory(scope.session.id, [...earlier, ...stored]);
  deps.metrics.turns.inc({ status: 'completed' });
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries };
}

/**
 * Stores an apology as the reply and marks the session failed, keeping the record of what the turn did before it
 * failed: the tool calls that ran (their side effects are real) and the tokens of the model calls that answered.
 * @throws the store's error when even that cannot be stored: then nothing is sent.
 */
export async function persistFailure(scope: TurnScope, failures: ModelFailures): Promise<Answer> {
  const { deps } = scope;
  // The store is the truth after a failure: the next turn reloads what it needs.
  deps.cache.forgetHistory(scope.session.id);
  deps.cache.forgetState(scope.user.id);
  const apology = systemText(scope.language, 'turn.apology', undefined, deps.agent.defaultLanguage);
  const usage = usageOf(scope, scope.modelCalls);
  const audit = toolAuditRecords([...scope.toolRuns.values()], [], scope.correlationId);
  const state: UserState = { ...scope.initialState, responseChainId: null };
  const parts = splitReply(apology, scope.channel.capabilities.maxMessageChars);
  const deliveries = await deps.store.transaction(async (tx) => {
    const stored = await tx.messages.append(
      scope.session.id,
      [
        ...newMessages(scope),
        ...audit,
        { id: scope.replyMessageId, role: 'assistant', audience: 'display', content: apology, correlationId: scope.correlationId, ...usage, currency: deps.currency, meta: { error: true, ...(failures.length > 0 ? { failures } : {}) } },
      ],
      { status: 'failed', ...(scope.modelCalls.length > 0 ? { usage: { ...usage, currency: deps.currency } } : {}) },
    );
    await markAnswered(scope, tx, stored);
    await tx.userState.save(scope.user.id, state);
    return addToOutbox(scope, tx, stored, parts);
  });
  deps.metrics.turns.inc({ status: 'failed' });
  return { outcome: outcome(scope, 'failed', apology, usage), parts, deliveries };
}

/** The person's messages this turn answers, as they join the conversation. */
function newMessages(scope: TurnScope): NewMessage[] {
  return scope.messages.map(({ inbound }) => ({ role: 'user', audience: 'display', content: inbound.text, correlationId: inbound.correlationId }));
}

/** The inbox's record that these messages are answered, by the reply (the last message stored). */
async function markAnswered(scope: TurnScope, tx: Store, stored: readonly StoredMessage[]): Promise<void> {
  const reply = stored[stored.length - 1]!;
  await tx.inbound.markAnswered(
    scope.messages.map(({ inbound }) => inbound.id),
    { id: reply.id, seq: reply.seq },
  );
}

/**
 * For a channel that delivers offline: the reply's parts, pending, in the outbox — stored with the reply, so a crash
 * between storing and sending leaves them to be sent after restart.
 */
async function addToOutbox(scope: TurnScope, tx: Store, stored: readonly StoredMessage[], parts: readonly string[]): Promise<readonly DeliveryRecord[] | undefined> {
  if (!scope.channel.capabilities.offlineDelivery) return undefined;
  const reply = stored[stored.length - 1]!;
  const { target } = scope;
  return tx.deliveries.add(
    parts.map((text, part) => ({
      sessionId: scope.session.id,
      replyMessageId: reply.id,
      part,
      text,
      channel: target.channel,
      conversationId: target.conversationId,
      accountId: target.accountId,
      inReplyTo: target.inReplyTo,
      correlationId: scope.correlationId,
    })),
    scope.lease,
  );
}

/**
 * Saves the user's state if nobody else changed it since it was loaded. Another process may have (a second
 * Palaver on the same database): the turn's state still wins, as the newest, and the overwrite is logged.
 */
async function saveState(scope: TurnScope, tx: Store, state: UserState): Promise<number> {
  const version = await tx.userState.save(scope.user.id, state, scope.stateVersion);
  if (version !== false) return version;
  scope.log.warn({ expectedVersion: scope.stateVersion }, 'user state changed elsewhere during the turn; saving this turn\'s state over it');
  return (await tx.userState.save(scope.user.id, state)) as number;
}

function usageOf(scope: TurnScope, calls: readonly ModelCallRecord[]) {
  return {
    inputTokens: calls.reduce((sum, call) => sum + call.usage.inputTokens, 0),
    outputTokens: calls.reduce((sum, call) => sum + call.usage.outputTokens, 0),
    cost: sumCosts(calls.map((call) => costOf(scope.deps.prices, call.model, call.usage))),
  };
}

function outcome(scope: TurnScope, status: TurnOutcome['status'], reply: string, usage: ReturnType<typeof usageOf>): TurnOutcome {
  return {
    correlationId: scope.correlationId,
    sessionId: scope.session.id,
    userId: scope.user.id,
    reply,
    replyMessageId: scope.replyMessageId,
    status,
    usage: { ...usage, currency: scope.deps.currency },
  };
}
