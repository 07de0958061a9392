import { StoreError } from '../../domain/errors.js';
import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { TurnOutcome } from '../../domain/ports/channel.js';
import type { FlowResult, ModelCallRecord } from '../../domain/ports/flow.js';
import { systemText } from '../../i18n/index.js';
import { resetUserState } from '../context/reset.js';
import { chainPointAfter } from '../context/response-chain.js';
import type { UserState } from '../context/user-state.js';
import type { ModelFailures } from '../flow-context.js';
import { splitReply } from '../reply.js';
import { toolAuditRecords } from '../tools/tool-call.js';
import type { Answer } from './answer.js';
import type { BilledUsage } from '../billing.js';
import type { BudgetKind } from '../budget.js';
import type { TurnScope } from './turn-context.js';
import { closeTurn } from './close-turn.js';

/**
 * Stores a completed turn in one transaction: the flow's audit records, the reply with its usage, cost and model
 * path, the session totals and status, and the user's state. Resolves with the answer to deliver.
 */
export function persistReply(
  scope: TurnScope,
  flow: FlowResult,
  text: string,
  parts: readonly string[],
  failures: ModelFailures,
  earlier: readonly StoredMessage[],
  seenUpTo: number | undefined,
): Promise<Answer> {
  return inSessionCurrency(scope, () => storeReply(scope, flow, text, parts, failures, earlier, seenUpTo));
}

/**
 * `seenUpTo`: the seq of the newest stored message the turn had read (undefined: none). When the turn's messages do
 * not follow on it, something was stored meanwhile (a recording): the cached history and the chain's place go.
 */
async function storeReply(
  scope: TurnScope,
  flow: FlowResult,
  text: string,
  parts: readonly string[],
  failures: ModelFailures,
  earlier: readonly StoredMessage[],
  seenUpTo: number | undefined,
): Promise<Answer> {
  const { deps } = scope;
  const usage = await usageOf(scope, flow.modelCalls);
  const last = flow.modelCalls[flow.modelCalls.length - 1];
  const reply: NewMessage = {
    id: scope.replyMessageId,
    role: 'assistant',
    audience: 'display',
    content: text,
    model: last?.model ?? deps.models.primary.model,
    ...usage,
    currency: scope.currency,
    correlationId: scope.correlationId,
    meta: {
      fallback: flow.modelCalls.some((call) => call.fallback),
      paths: flow.modelCalls.map((call) => call.path),
      models: [...new Set(flow.modelCalls.map((call) => call.model))],
      ...(failures.length > 0 ? { failures } : {}),
    },
  };
  const { stored, saved, deliveries } = await closeTurn(scope, {
    // The new messages join the conversation with their answer, in the order the model saw them.
    messages: [...newMessages(scope), ...flow.audit, reply],
    session: { status: 'completed', usage: { ...usage, currency: scope.currency } },
    cost: usage.cost,
    // The chain (if any) has seen the conversation up to this reply, unless something was stored in between.
    state: (stored) => ({ ...flow.state, responseChainAt: flow.state.responseChainId === null ? null : chainPointAfter(scope.session.id, stored, seenUpTo) }),
    outbox: parts.map((text) => ({ text })),
  });
  const { version, state } = saved!;
  deps.metrics.addCost(scope.currency, usage.cost);
  deps.cache.rememberState(scope.user.id, { version, state });
  const followsOn = chainPointAfter(scope.session.id, stored, seenUpTo) !== null;
  // A role change resets the cached history (as the chain): the next turn reads it afresh from the store. So does a
  // recording that came in while the turn ran: the cache would miss it.
  if (!followsOn || flow.state.role !== (scope.initialState.role ?? deps.agent.defaultRole)) deps.cache.forgetHistory(scope.session.id);
  else deps.cache.rememberHistory(scope.session.id, [...earlier, ...stored]);
  deps.metrics.turns.inc({ status: 'completed' });
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries };
}

/**
 * Stores an apology as the reply and marks the session failed, keeping the record of what the turn did before it
 * failed: the tool calls that ran (their side effects are real), the tokens of the model calls that answered, and
 * `extraAudit` (the refused model output of a reply plan).
 * @throws the store's error when even that cannot be stored: then nothing is sent.
 */
export function persistFailure(scope: TurnScope, failures: ModelFailures, errorId: string, extraAudit: readonly NewMessage[] = []): Promise<Answer> {
  return inSessionCurrency(scope, () => storeFailure(scope, failures, errorId, extraAudit));
}

/**
 * The apology for a failed turn in the person's interface language, with the error id the log holds too: its two
 * sentences on two lines (a stored reply), or on one (an error message).
 */
export function apologyText(scope: TurnScope, errorId: string, separator: '\n' | ' ' = '\n'): string {
  const { defaultLanguage } = scope.deps.agent;
  return [
    systemText(scope.interfaceLanguage, 'turn.apology', undefined, defaultLanguage),
    systemText(scope.interfaceLanguage, 'turn.errorReference', { errorId }, defaultLanguage),
  ].join(separator);
}

async function storeFailure(scope: TurnScope, failures: ModelFailures, errorId: string, extraAudit: readonly NewMessage[]): Promise<Answer> {
  const { deps } = scope;
  const answer = await storeOwnReply(scope, {
    text: apologyText(scope, errorId),
    audit: extraAudit,
    status: 'failed',
    meta: { error: true, errorId, ...(failures.length > 0 ? { failures } : {}) },
    // A failed turn's chain may point at a response that never got its tool results: the next turn starts afresh.
    state: { ...scope.initialState, responseChainId: null },
  });
  deps.metrics.turns.inc({ status: 'failed' });
  return { ...answer, outcome: { ...answer.outcome, errorId } };
}

/**
 * Stores the notice that a spend cap is reached as the reply, in place of a turn that was refused at its start: the
 * turn ends cleanly (session completed), with no model called.
 */
export function persistBudgetNotice(scope: TurnScope, failures: ModelFailures, budget: BudgetKind): Promise<Answer> {
  return inSessionCurrency(scope, async () => {
    const notice = systemText(scope.interfaceLanguage, 'budget.exceeded', undefined, scope.deps.agent.defaultLanguage);
    const answer = await storeOwnReply(scope, { text: notice, status: 'completed', meta: { budget, ...(failures.length > 0 ? { failures } : {}) } });
    scope.deps.metrics.turns.inc({ status: 'completed' });
    return answer;
  });
}

/**
 * Stores a reply Palaver wrote itself (an apology, a notice) in place of the model's, with what the turn did before:
 * the tool calls that ran (their side effects are real) and the tokens of the model calls that answered.
 */
async function storeOwnReply(
  scope: TurnScope,
  reply: {
    readonly text: string;
    readonly status: 'completed' | 'failed';
    readonly meta: Record<string, unknown>;
    readonly state?: UserState;
    readonly audit?: readonly NewMessage[];
  },
): Promise<Answer> {
  const { deps } = scope;
  // The store is the truth after a turn that did not end as planned: the next turn reloads what it needs.
  deps.cache.forgetHistory(scope.session.id);
  deps.cache.forgetState(scope.user.id);
  const usage = await usageOf(scope, scope.journal.modelCalls);
  const audit = [...toolAuditRecords([...scope.journal.toolRuns.values()], [], scope.correlationId), ...(reply.audit ?? [])];
  const parts = splitReply(reply.text, scope.channel.capabilities.maxMessageChars);
  const { deliveries } = await closeTurn(scope, {
    messages: [...newMessages(scope), ...audit, replyMessage(scope, reply.text, usage, reply.meta)],
    session: { status: reply.status, ...(scope.journal.modelCalls.length > 0 ? { usage: { ...usage, currency: scope.currency } } : {}) },
    cost: usage.cost,
    ...(reply.state ? { state: () => reply.state! } : {}),
    outbox: parts.map((text) => ({ text })),
  });
  deps.metrics.addCost(scope.currency, usage.cost);
  return { outcome: outcome(scope, reply.status, reply.text, usage), parts, deliveries };
}

/**
 * The person's messages this turn answers, as they join the conversation. Each keeps the channel's id of it
 * (`meta.messageId`, as a recorded message does), so a later turn in actions mode can show it and a plan may react
 * to it; in a group each keeps its sender too (the bound user and the name they wrote under), so later turns can
 * label it for the model.
 */
export function newMessages(scope: TurnScope): NewMessage[] {
  const { sender } = scope.userContext;
  return scope.messages.map(({ inbound }) => {
    // `at`: when it arrived, not when its reply was stored (a quiet window, a long turn or a pause later).
    const meta = {
      at: inbound.receivedAt.toISOString(),
      ...(inbound.messageId === null ? {} : { messageId: inbound.messageId }),
      ...(inbound.attachments === undefined || inbound.attachments.length === 0 ? {} : { attachments: inbound.attachments }),
      ...(sender === null ? {} : { sender: { userId: sender.userId, name: inbound.displayName ?? sender.name } }),
    };
    return {
      role: 'user',
      audience: 'display',
      content: inbound.text,
      correlationId: inbound.correlationId,
      meta,
    };
  });
}

/**
 * Stores the turn in its billing currency; when the session turns out to hold money in another one (its row was read
 * before the user's country changed, or before another turn fixed its currency), once more in the session's: a
 * session keeps one currency, and the person still gets their answer.
 */
export async function inSessionCurrency(scope: TurnScope, store: () => Promise<Answer>): Promise<Answer> {
  try {
    return await store();
  } catch (error) {
    if (!(error instanceof StoreError) || error.code !== 'currency_mismatch') throw error;
    const session = await scope.deps.store.sessions.findById(scope.session.id);
    if (session === undefined || session.currency === scope.currency) throw error;
    scope.log.info({ currency: session.currency, billingCurrency: scope.currency }, 'session holds another currency; storing the turn in it');
    scope.currency = session.currency;
    return store();
  }
}

/**
 * The turn's own reply message, stored under the turn's reply id (what the web stream showed it as): Palaver's notice,
 * an apology, or a reset's answer, with the usage of the model calls that led to it.
 */
export function replyMessage(scope: TurnScope, text: string, usage: BilledUsage, meta: Readonly<Record<string, unknown>>): NewMessage {
  return {
    id: scope.replyMessageId,
    role: 'assistant',
    audience: 'display',
    content: text,
    correlationId: scope.correlationId,
    ...usage,
    currency: scope.currency,
    meta,
  };
}

/** Tokens and cost of the turn's model calls, in the user's billing currency (6 places). */
export function usageOf(scope: TurnScope, calls: readonly ModelCallRecord[]): Promise<BilledUsage> {
  // Calls paid when the turn stopped to ask for an approval are replayed now, not paid again.
  return scope.deps.billing.usageOf(scope.journal.unbilled(calls), scope.currency, scope.deps.now());
}

export function outcome(scope: TurnScope, status: TurnOutcome['status'], reply: string, usage: BilledUsage): TurnOutcome {
  return {
    correlationId: scope.correlationId,
    sessionId: scope.session.id,
    userId: scope.user.id,
    reply,
    replyMessageId: scope.replyMessageId,
    status,
    usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, cost: usage.cost, currency: scope.currency },
  };
}

/**
 * Answers a reset trigger without the model: stores the person's messages and Palaver's confirmation (in their
 * interface language), then starts the conversation afresh after them, so the next turn's history is empty; the
 * response chain goes, and the role unless config keeps it.
 */
export async function persistReset(scope: TurnScope): Promise<Answer> {
  const { deps } = scope;
  const text = systemText(scope.interfaceLanguage, 'reset.done', undefined, deps.agent.defaultLanguage);
  const usage = await usageOf(scope, []);
  const state = resetUserState(scope.initialState, deps.agent.resetKeepsRole);
  const parts = splitReply(text, scope.channel.capabilities.maxMessageChars);
  const closed = await closeTurn(scope, {
    messages: [...newMessages(scope), replyMessage(scope, text, usage, { reset: true })],
    session: { status: 'completed' },
    // The trigger and its confirmation are behind the new start too.
    resetContext: true,
    state: () => state,
    outbox: parts.map((text) => ({ text })),
  });
  const { deliveries } = closed;
  const saved = closed.saved!;
  deps.cache.rememberState(scope.user.id, saved);
  deps.cache.rememberHistory(scope.session.id, []);
  deps.metrics.turns.inc({ status: 'completed' });
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries };
}
