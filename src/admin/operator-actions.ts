import { createHash } from 'node:crypto';
import { ChannelError, ChannelRetryLaterError, StoreError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { NewMessage, Session } from '../domain/model.js';
import type { Channel, ReplyTarget } from '../domain/ports/channel.js';
import type { AdminAction, AdminActionKind, DeliveryRecord, Store } from '../domain/ports/store.js';
import type { AdminResult } from '../domain/admin-result.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';
import { resetUserState } from '../runtime/context/reset.js';
import { updateUserState } from '../runtime/context/user-state-update.js';
import { accountNamespaceOf } from '../runtime/pipeline/keys.js';
import type { Pipeline } from '../runtime/pipeline/pipeline.js';
import { postponeParts } from '../runtime/postponement.js';
import { splitReply } from '../runtime/reply.js';

/** Who asked for an action, as the admin API knows it. */
export interface OperatorRequest {
  /** The operator account's name; for the admin token `admin`, or the name its client passed on (`X-Palaver-Actor`). */
  readonly actor: string;
  /** The operator account that asked; null or absent for the admin token. */
  readonly operatorId?: string | null;
  readonly requestId: string | null;
}

/** What a send as the agent answers: the stored message, its parts, and whether an earlier request already sent it. */
export interface SentAsAgent {
  readonly messageId: string;
  readonly parts: number;
  readonly duplicate: boolean;
}

/** A conversation an operator took: assigned to them (`changed`: it was not already), the agent paused. */
export interface TakenConversation {
  readonly sessionId: string;
  readonly assignedTo: string;
  readonly changed: boolean;
  readonly paused: boolean;
}

/** A conversation's state after a pause or resume; `changed` is false when it already was so. */
export interface PauseState {
  readonly sessionId: string;
  readonly paused: boolean;
  readonly changed: boolean;
  /** On resume: the held messages this process took to answer now (in one turn). */
  readonly answering?: number;
}

export interface OperatorActionsOptions {
  readonly store: Store;
  readonly pipeline: Pipeline;
  /** The turn's caches, which forget what an action changed so the next turn reads it afresh. */
  readonly cache: { forgetHistory(sessionId: string): void; forgetState(userId: string): void };
  /** Whether ending a conversation keeps the person's role (`reset.keepRole`, as `/reset`). */
  readonly resetKeepsRole: boolean;
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  /** Clock of handoffs taken and closed (default: the system's). */
  readonly now?: () => Date;
}

/**
 * What an operator does in a conversation through the admin API: send a message as the agent, take it, pause and
 * resume the agent (handing it back with a note), end the conversation. Each action is written to the operators'
 * audit (`admin_actions`) in the transaction of the change it makes.
 */
export class OperatorActions {
  readonly #options: OperatorActionsOptions;

  constructor(options: OperatorActionsOptions) {
    this.#options = options;
  }

  /**
   * Sends `text` into the conversation as the agent: stored as the agent's display message (`meta.operator` names
   * who wrote it), then delivered through the conversation's channel once. A channel that delivers offline
   * (Telegram) gets it through the outbox, stored with the message: a crash before it is sent leaves it to the next
   * recovery round, which sends it. A channel with live pages (`showOperatorEvent`: the web) shows it there as a
   * person's message, and a page opened later shows it from the transcript; any other channel is sent to once.
   *
   * A second request with the same `idempotencyKey` sends nothing and answers as the first did (`duplicate: true`);
   * the key's audit row is written in the transaction of the message, so exactly one of two racing requests stores.
   */
  async send(sessionId: string, text: string, request: OperatorRequest & { readonly idempotencyKey: string }): Promise<AdminResult<SentAsAgent>> {
    const { store, pipeline, cache } = this.#options;
    const session = await store.sessions.findById(sessionId);
    if (!session) return notFound(sessionId);
    const channel = pipeline.runningChannel(session.channel);
    if (!channel) return conflict(`The conversation's channel ${session.channel} does not run in this Palaver; nothing was sent.`);
    const parts = splitReply(text, channel.capabilities.maxMessageChars);
    const messageId = newId();
    const correlationId = newId();
    const digest = sha256(text);
    const target: ReplyTarget = {
      channel: channel.name,
      conversationId: session.conversationId,
      accountId: await this.#accountOf(channel, session),
      inReplyTo: [],
      correlationId,
      sessionId,
    };
    const stored = await store.transaction(async (tx): Promise<{ readonly earlier?: AdminAction; readonly deliveries?: readonly DeliveryRecord[] }> => {
      const recorded = await tx.adminActions.record({
        ...this.#audit('send', session, request),
        idempotencyKey: request.idempotencyKey,
        details: { messageId, parts: parts.length, channel: channel.name, textSha256: digest },
      });
      if (!recorded.recorded) return { earlier: recorded.existing };
      await tx.messages.append(sessionId, [
        {
          id: messageId,
          role: 'assistant',
          audience: 'display',
          content: text,
          correlationId,
          meta: { operator: request.actor, ...(request.requestId ? { requestId: request.requestId } : {}) },
        },
      ]);
      if (!channel.capabilities.offlineDelivery) return {};
      const deliveries = await tx.deliveries.add(
        parts.map((part, index) => ({
          sessionId,
          replyMessageId: messageId,
          part: index,
          text: part,
          channel: channel.name,
          conversationId: target.conversationId,
          accountId: target.accountId,
          inReplyTo: [],
          correlationId,
        })),
        pipeline.lease,
      );
      return { deliveries };
    });
    if (stored.earlier) return repeated(stored.earlier, sessionId, digest);
    // The model reads the conversation with the operator's words in it: its cached history would miss them.
    cache.forgetHistory(sessionId);
    const log = this.#options.logger.child({ correlationId, sessionId, actor: request.actor });
    log.info({ channel: channel.name, parts: parts.length }, 'message sent as the agent by an operator');
    // A channel with live pages (the web) shows it there as a person's message, whole; the transcript has it too.
    if (!channel.capabilities.offlineDelivery && channel.showOperatorEvent) {
      channel.showOperatorEvent(
        { conversationId: session.conversationId, sessionId },
        { kind: 'message', messageId, text, operator: request.actor, at: new Date().toISOString() },
      );
      return { ok: true, value: { messageId, parts: parts.length, duplicate: false } };
    }
    // Not awaited: the request is answered once the message is stored (202); the channel may ask to wait.
    void this.#deliver(channel, target, messageId, parts, stored.deliveries, log);
    return { ok: true, value: { messageId, parts: parts.length, duplicate: false } };
  }

  /** Pauses the agent in the conversation: its messages are stored and held, not answered, until it is resumed. */
  async pause(sessionId: string, request: OperatorRequest): Promise<AdminResult<PauseState>> {
    return this.#setPaused(sessionId, true, request);
  }

  /**
   * Takes the conversation: assigned to the acting operator (shown to the others), the agent paused if it was not,
   * and its open handoff marked taken (operators are told no more). Somebody else's conversation is refused
   * (`conflict`, naming who has it) unless `force`; of two operators taking it at once exactly one gets it.
   */
  async take(sessionId: string, request: OperatorRequest, options: { readonly force?: boolean } = {}): Promise<AdminResult<TakenConversation>> {
    const { store, logger } = this.#options;
    const operator = request.actor;
    const at = this.#now().getTime();
    let result: AdminResult<TakenConversation & { readonly session: Session; readonly pausedNow: boolean }>;
    try {
      result = await store.transaction(async (tx) => {
        // The assignment's statement comes first: it decides between operators taking the conversation at once, and
        // whatever this transaction reads after it is read after the winner's commit.
        let assigned = await tx.sessions.assign(sessionId, operator);
        let from: string | null = null;
        if (!assigned.changed && assigned.assignedTo !== operator) {
          if (options.force !== true) return taken(assigned.assignedTo);
          from = assigned.assignedTo;
          assigned = await tx.sessions.assign(sessionId, operator, { force: true });
        }
        const session = (await tx.sessions.findById(sessionId))!;
        const pausedNow = await tx.sessions.setPaused(sessionId, true);
        const handoff = await tx.handoffs.take(sessionId, operator, at);
        await tx.adminActions.record({
          ...this.#audit('take', session, request),
          details: { changed: assigned.changed, paused: pausedNow, ...(from === null ? {} : { from }), ...(handoff ? { handoffId: handoff.id } : {}) },
        });
        return { ok: true, value: { sessionId, assignedTo: operator, changed: assigned.changed, paused: true, session, pausedNow } };
      });
    } catch (error) {
      if (error instanceof StoreError && error.code === 'not_found') return notFound(sessionId);
      throw error;
    }
    if (!result.ok) return result;
    const { session, pausedNow, ...value } = result.value;
    logger.info({ sessionId, actor: operator, changed: value.changed }, 'conversation taken by an operator');
    if (pausedNow) this.#showPaused(session, true);
    return { ok: true, value };
  }

  /**
   * Resumes the agent: the messages held meanwhile are answered, once, together in one turn. The open handoff
   * closes and the conversation is nobody's any more. `note`: what the operator leaves the agent, stored in the
   * conversation as hidden context its next turns read (never shown to the person).
   */
  async resume(sessionId: string, request: OperatorRequest, options: { readonly note?: string } = {}): Promise<AdminResult<PauseState>> {
    const at = this.#now().getTime();
    const result = await this.#setPaused(sessionId, false, request, async (tx, session) => {
      const handoff = await tx.handoffs.close(sessionId, request.actor, at);
      if (session.assignedTo !== null) await tx.sessions.assign(sessionId, null);
      let noteId: string | undefined;
      if (options.note !== undefined) {
        noteId = newId();
        await tx.messages.append(sessionId, [operatorNote(noteId, options.note, request)]);
      }
      return { ...(handoff ? { handoffId: handoff.id } : {}), ...(noteId ? { noteId } : {}) };
    });
    if (!result.ok) return result;
    // The next turn reads the note (and the operator's words) from the store.
    if (options.note !== undefined) this.#options.cache.forgetHistory(sessionId);
    const session = await this.#options.store.sessions.findById(sessionId);
    const answering = session ? await this.#options.pipeline.answerHeld(session) : 0;
    return { ok: true, value: { ...result.value, answering } };
  }

  /**
   * Ends the conversation: status `completed`, its end time kept, and the model's next turn starts afresh (as
   * `/reset`: no history before it, no response chain, the role as `reset.keepRole` says). The conversation goes back
   * to the agent: its handoff closes, nobody has it, and a paused agent is resumed, so that messages still waiting
   * (held while it was paused) are answered in the fresh context and the person's next ones are answered at all.
   */
  async end(sessionId: string, request: OperatorRequest): Promise<AdminResult<Session>> {
    const { store, cache, resetKeepsRole } = this.#options;
    const at = this.#now().getTime();
    const result = await store.transaction(async (tx): Promise<AdminResult<{ readonly ended: Session; readonly resumed: boolean }>> => {
      const session = await tx.sessions.findById(sessionId);
      if (!session) return notFound(sessionId);
      // Its handoff is over with it, and it is nobody's any more: left paused, it would be nobody's and never answered.
      const handoff = await tx.handoffs.close(sessionId, request.actor, at);
      if (session.assignedTo !== null) await tx.sessions.assign(sessionId, null);
      const resumed = await tx.sessions.setPaused(sessionId, false);
      const ended = await tx.sessions.end(sessionId);
      await updateUserState(tx.userState, session.userId, (state) => resetUserState(state, resetKeepsRole));
      const details = { ...(handoff ? { handoffId: handoff.id } : {}), ...(resumed ? { resumed } : {}) };
      await tx.adminActions.record({ ...this.#audit('end', session, request), ...(Object.keys(details).length > 0 ? { details } : {}) });
      return { ok: true, value: { ended, resumed } };
    });
    if (!result.ok) return result;
    const { ended, resumed } = result.value;
    cache.forgetHistory(sessionId);
    cache.forgetState(ended.userId);
    this.#options.logger.info({ sessionId, actor: request.actor, resumed }, 'conversation ended by an operator');
    if (resumed) {
      this.#showPaused(ended, false);
      await this.#options.pipeline.answerHeld(ended);
    }
    return { ok: true, value: ended };
  }

  /** The operators' audit, newest first. */
  actions(limit: number): Promise<AdminAction[]> {
    return this.#options.store.adminActions.list({ limit });
  }

  /** `also`: more of the same change, in its transaction; what it resolves with joins the audit row's details. */
  async #setPaused(
    sessionId: string,
    paused: boolean,
    request: OperatorRequest,
    also?: (tx: Store, session: Session) => Promise<Record<string, unknown>>,
  ): Promise<AdminResult<PauseState>> {
    const result = await this.#options.store.transaction(async (tx): Promise<AdminResult<PauseState & { readonly session: Session }>> => {
      const session = await tx.sessions.findById(sessionId);
      if (!session) return notFound(sessionId);
      const changed = await tx.sessions.setPaused(sessionId, paused);
      const details = also === undefined ? {} : await also(tx, session);
      await tx.adminActions.record({ ...this.#audit(paused ? 'pause' : 'resume', session, request), details: { changed, ...details } });
      this.#options.logger.info(
        { sessionId, actor: request.actor, changed },
        paused ? 'conversation paused by an operator' : 'conversation resumed by an operator',
      );
      return { ok: true, value: { sessionId, paused, changed, session } };
    });
    if (!result.ok) return result;
    const { session, ...state } = result.value;
    if (state.changed) this.#showPaused(session, paused);
    return { ok: true, value: state };
  }

  /**
   * Open pages show at once that a person answers now (or the agent again); called after the commit, so a page that
   * reads the state on this notice reads the new one.
   */
  #showPaused(session: Session, paused: boolean): void {
    this.#options.pipeline
      .runningChannel(session.channel)
      ?.showOperatorEvent?.({ conversationId: session.conversationId, sessionId: session.id }, { kind: 'paused', paused });
  }

  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  #audit(action: AdminActionKind, session: Session, request: OperatorRequest) {
    return {
      action,
      actor: request.actor,
      operatorId: request.operatorId ?? null,
      requestId: request.requestId,
      sessionId: session.id,
      userId: session.userId,
    };
  }

  /** The person's account on the conversation's channel (the account a reply answers); the conversation id if none. */
  async #accountOf(channel: Channel, session: Session): Promise<string> {
    const namespace = accountNamespaceOf(channel);
    const accounts = await this.#options.store.users.listAccounts(session.userId);
    return accounts.find((account) => account.channel === namespace)?.accountId ?? session.conversationId;
  }

  /**
   * Sends the parts in order. Through the outbox: each is marked sent as the channel takes it; a flood wait leaves
   * it and the rest to be sent when allowed, behind earlier replies still waiting there. Never throws.
   */
  async #deliver(
    channel: Channel,
    target: ReplyTarget,
    messageId: string,
    parts: readonly string[],
    records: readonly DeliveryRecord[] | undefined,
    log: Logger,
  ): Promise<void> {
    const { store } = this.#options;
    let sent = 0;
    try {
      if (records) {
        const behind = await store.deliveries
          .queuedAhead({ channel: channel.name, conversationId: target.conversationId, replyMessageId: messageId })
          .catch(() => undefined);
        if (behind !== undefined) {
          await postponeParts(this.#options, log, records, behind, 'earlier replies of the conversation wait in the outbox');
          return;
        }
      }
      for (const [index, part] of parts.entries()) {
        const record = records?.[index];
        const receipt = await channel.send(target, part, { deliveryKey: record?.id ?? `${messageId}:${index}` });
        sent += 1;
        if (record) await store.deliveries.markSent(record.id, receipt.messageId);
      }
    } catch (error) {
      const unsent = records?.slice(sent) ?? [];
      if (error instanceof ChannelRetryLaterError && unsent.length > 0) {
        await postponeParts(this.#options, log, unsent, error.retryAfterMs, 'the channel asked to wait');
        return;
      }
      for (const part of unsent) await store.deliveries.markFailed(part.id, error instanceof Error ? error.message : String(error)).catch(() => undefined);
      // The web channel without an open run is ordinary: the message is stored, and the page shows it on load.
      if (error instanceof ChannelError && error.code === 'client_gone')
        log.info({ channel: channel.name }, 'message sent as the agent is stored; no open run shows it now, the transcript does');
      else log.warn({ err: error, channel: channel.name, sentParts: sent, parts: parts.length }, 'could not send the message sent as the agent');
    }
  }
}

/** The answer to a repeated key: the first request's, unless the key was used for another message. */
function repeated(earlier: AdminAction, sessionId: string, digest: string): AdminResult<SentAsAgent> {
  const { messageId, parts, textSha256 } = earlier.details;
  if (earlier.action !== 'send' || earlier.sessionId !== sessionId || textSha256 !== digest || typeof messageId !== 'string' || typeof parts !== 'number') {
    return conflict('That Idempotency-Key was used for another request; nothing was sent. Use a new key for a new message.');
  }
  return { ok: true, value: { messageId, parts, duplicate: true } };
}

/**
 * An operator's note to the agent, as the conversation keeps it: a `system` message the model reads in its next turns
 * ("Note from operator …"), which the person's transcript leaves out (it shows only the person's and the agent's words).
 */
function operatorNote(id: string, note: string, request: OperatorRequest): NewMessage {
  return {
    id,
    role: 'system',
    audience: 'display',
    content: note,
    correlationId: request.requestId ?? id,
    meta: { operatorNote: true, operator: request.actor, ...(request.requestId ? { requestId: request.requestId } : {}) },
  };
}

/** Another operator has the conversation: nothing changed. */
function taken(holder: string | null): { ok: false; error: { code: 'conflict'; message: string; assignedTo?: string } } {
  return {
    ok: false,
    error: {
      code: 'conflict',
      message: `${holder ?? 'Another operator'} has taken this conversation; nothing changed. Take it over with { "force": true }.`,
      ...(holder === null ? {} : { assignedTo: holder }),
    },
  };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function notFound(sessionId: string): { ok: false; error: { code: 'not_found'; message: string } } {
  return { ok: false, error: { code: 'not_found', message: `There is no conversation ${sessionId}.` } };
}

function conflict(message: string): { ok: false; error: { code: 'conflict'; message: string } } {
  return { ok: false, error: { code: 'conflict', message } };
}
