import { FencedOut } from '../../domain/errors.js';
import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { ToolApproval } from '../../domain/approval.js';
import type { DeliveryRecord, Handoff, HandoffSource, NewToolApproval, SessionChange, Store } from '../../domain/ports/store.js';
import { settleBudget } from '../budget.js';
import type { UserState } from '../context/user-state.js';
import { saveTurnState, type SavedUserState } from '../context/user-state-update.js';
import type { TurnScope } from './turn-context.js';

/** One outbox record of the turn's reply: a part to send, or a reaction (numbered in the order given). */
export type OutboxPart = Pick<DeliveryRecord, 'text'> & Partial<Pick<DeliveryRecord, 'replyTo' | 'reaction' | 'approval'>>;

/**
 * How a turn ends, whatever answered it (the model's text, a reply plan, Palaver's own notice or apology, a reset):
 * the one closing write of a turn is made of these.
 */
export interface TurnClosing {
  /** Everything the conversation gains, in order: the person's messages, audit records, the reply (or replies). */
  readonly messages: readonly NewMessage[];
  /** The session's status and usage, changed in the same write as its message counter. */
  readonly session: SessionChange;
  /** The stored message the inbox points at as the answer. Default: the last one stored. */
  readonly answeredBy?: (stored: readonly StoredMessage[]) => StoredMessage;
  /** The real cost to settle the turn's budget reservation with; undefined: the turn reserved nothing. */
  readonly cost?: string;
  /** After the append, the conversation starts afresh (a reset): the next turn's history is empty. */
  readonly resetContext?: boolean;
  /** The user's state after the turn, given what was stored (a response chain's place); undefined: unchanged. */
  readonly state?: (stored: readonly StoredMessage[]) => UserState;
  /** For a channel that delivers offline, what goes to the outbox (as parts of the turn's reply), in order. */
  readonly outbox: readonly OutboxPart[];
  /**
   * The turn goes on after this write under its claim (a reply plan, paced by waits, is carried out): the claim is
   * not ended here. Default: it ends with this write, and the reply's sending needs no claim.
   */
  readonly keepsClaim?: boolean;
  /** The conversation goes to a person: the session is paused and the handoff opened, with its audit row. */
  readonly handoff?: { readonly reason: string; readonly source: HandoffSource };
  /**
   * The reply asks someone to approve a tool call: the request is recorded (holding the conversation's next messages)
   * and the journal is kept instead of ended, so the decision resumes the turn where it stopped.
   */
  readonly approval?: NewToolApproval;
}

export interface ClosedTurn {
  readonly stored: readonly StoredMessage[];
  /** The user's state as saved (undefined when the closing changed none). */
  readonly saved: SavedUserState | undefined;
  readonly deliveries: readonly DeliveryRecord[] | undefined;
  /** With `TurnClosing.handoff`: the open handoff, whether this write opened it, and whether it paused the session. */
  readonly handoff?: OpenedHandoff;
  /** With `TurnClosing.approval`: the request as recorded. */
  readonly approval?: ToolApproval;
}

export interface OpenedHandoff {
  readonly handoff: Handoff;
  readonly opened: boolean;
  readonly paused: boolean;
}

/**
 * The turn's closing write, in one transaction: its messages and the session's change, the inbox's "answered" mark
 * (fenced: another process that answered them meanwhile wins, and nothing is stored), the journal's end and the
 * conversation claim's (unless `keepsClaim`), the budget settled, the context reset, the user's state, the outbox and
 * a handoff to a person. Every kind of reply ends its turn here.
 * @throws FencedOut when another turn answered one of the messages meanwhile.
 */
export async function closeTurn(scope: TurnScope, closing: TurnClosing): Promise<ClosedTurn> {
  return scope.deps.store.transaction(async (tx) => {
    const stored = await tx.messages.append(scope.session.id, closing.messages, closing.session);
    await markAnswered(scope, tx, (closing.answeredBy ?? lastOf)(stored), closing.keepsClaim !== true, closing.approval !== undefined);
    if (closing.cost !== undefined) await settleBudget(scope, tx, closing.cost);
    // After the append: the closing's own messages are behind the new start too.
    if (closing.resetContext) await tx.sessions.resetContext(scope.session.id);
    const saved = closing.state === undefined ? undefined : await saveState(scope, tx, closing.state(stored));
    const deliveries = scope.channel.capabilities.offlineDelivery ? await addToOutbox(scope, tx, closing.outbox) : undefined;
    const handoff = closing.handoff === undefined ? undefined : await handOver(scope, tx, closing.handoff);
    const approval = closing.approval === undefined ? undefined : await tx.approvals.request(closing.approval);
    return { stored, saved, deliveries, ...(handoff === undefined ? {} : { handoff }), ...(approval === undefined ? {} : { approval }) };
  });
}

/**
 * Hands the conversation to a person in the closing write: the agent paused (what the person writes next is stored
 * and held), the handoff opened (or the open one kept), and the agent's audit row, so a crash leaves all or none.
 */
async function handOver(scope: TurnScope, tx: Store, request: NonNullable<TurnClosing['handoff']>): Promise<OpenedHandoff> {
  const { session } = scope;
  const paused = await tx.sessions.setPaused(session.id, true);
  const { handoff, opened } = await tx.handoffs.open({ sessionId: session.id, userId: session.userId, ...request, at: scope.deps.now().getTime() });
  await tx.adminActions.record({
    action: 'handoff',
    actor: 'agent',
    requestId: scope.correlationId,
    sessionId: session.id,
    userId: session.userId,
    details: { handoffId: handoff.id, reason: request.reason, source: request.source, opened, paused },
  });
  return { handoff, opened, paused };
}

function lastOf(stored: readonly StoredMessage[]): StoredMessage {
  return stored[stored.length - 1]!;
}

/** The inbox's record that the turn's messages are answered by `reply`; the journal (and the claim) go with it. */
async function markAnswered(scope: TurnScope, tx: Store, reply: StoredMessage, endClaim: boolean, waits: boolean): Promise<void> {
  // The turn's progress is over with its reply: its journal goes in the same transaction (or stays, for a turn that
  // waits for an approval and goes on after it).
  if (waits) await scope.journal.suspend(tx, endClaim);
  else await scope.journal.end(tx, endClaim);
  const ids = scope.messages.map(({ inbound }) => inbound.id);
  const marked = await tx.inbound.markAnswered(ids, { id: reply.id, seq: reply.seq });
  // Another process answered one of them while this process's lease on it had lapsed: this reply is not stored.
  if (marked !== ids.length) throw new FencedOut(`another turn answered ${ids.length - marked} of this turn's messages meanwhile; it stores and sends nothing`);
}

/**
 * Saves the user's state if nobody else changed it since it was loaded. Another process may have (a second
 * Palaver on the same database): the turn's state still wins, as the newest, and the overwrite is logged.
 */
async function saveState(scope: TurnScope, tx: Store, state: UserState): Promise<SavedUserState> {
  const saved = await saveTurnState(tx.userState, scope.user.id, { state: scope.initialState, version: scope.stateVersion }, state);
  if (saved.rebased)
    scope.log.info(
      { expectedVersion: scope.stateVersion, version: saved.version },
      "user state changed elsewhere during the turn; this turn's changes were applied to it",
    );
  return saved;
}

/**
 * The reply's parts, pending, in the outbox — stored with the reply, so a crash between storing and sending leaves
 * them to be sent after restart.
 */
async function addToOutbox(scope: TurnScope, tx: Store, parts: readonly OutboxPart[]): Promise<readonly DeliveryRecord[]> {
  const { target } = scope;
  return tx.deliveries.add(
    parts.map((part, index) => ({
      sessionId: scope.session.id,
      replyMessageId: scope.replyMessageId,
      part: index,
      ...part,
      channel: target.channel,
      conversationId: target.conversationId,
      accountId: target.accountId,
      inReplyTo: target.inReplyTo,
      correlationId: scope.correlationId,
    })),
    scope.lease,
  );
}
