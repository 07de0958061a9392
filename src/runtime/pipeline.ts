import { ChannelError, ChannelRetryLaterError, IdentityError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { unstorableReason } from '../domain/storable-text.js';
import type { InboundRecord, Session } from '../domain/model.js';
import type { DeliveryRecord } from '../domain/ports/store.js';
import { resetUserState } from './context/reset.js';
import { updateUserState } from './context/user-state-update.js';
import type { Acceptance, Channel, ChannelContext, ConversationSummary, InboundMessage, RecordedConversation, RecordedMessage, StoredReply, TranscriptEntry } from '../domain/ports/channel.js';
import type { AccountClaim, IdentityResolver, PhoneLinkOutcome, ResolvedIdentity } from '../domain/ports/identity.js';
import { systemText } from '../i18n/index.js';
import type { Participant, ParticipantKey } from './conversation-cache.js';
import { Inbox, type QuietWindow } from './inbox.js';
import { wasNotSent } from './reply-plan/model-notes.js';
import { postponeParts } from './postponement.js';
import { settlesWithin } from './settles-within.js';
import { runTurn } from './turn.js';
import { byAttempts, DEFAULT_MAX_TURN_ATTEMPTS, retryDelayMs } from './turn-attempts.js';
import { formBatch } from './turn-batch.js';
import { loadProfile } from './turn-scope.js';
import type { AcceptedMessage, TurnDependencies, TurnRequest } from './turn-context.js';

export interface PipelineOptions {
  /** Longest accepted inbound text in characters. */
  readonly maxInboundChars: number;
  /**
   * How long an accepted message stays leased to this process without a renewal, in ms. After a crash, another
   * process (or this one restarted) answers it once the lease ran out. Default 15 000.
   */
  readonly leaseMs?: number;
  /**
   * Turns that may take one message (first turn, retries after a failure to store, recoveries), counted in the store;
   * then it is answered with an apology without the model. Default 3.
   */
  readonly maxTurnAttempts?: number;
  /** Turns running at once across all conversations (default: no limit). */
  readonly maxConcurrentTurns?: number;
  /**
   * Runs the storing of one accepted message (identity, session, inbox row) under a concurrency limit. A crowd of
   * thousands arriving at once then waits holding only its messages, not thousands of half-done writes (default: no
   * limit).
   */
  readonly limitAccepts?: <T>(store: () => Promise<T>) => Promise<T>;
  /**
   * Looks for a phone number in what people write (`identity.phones.fromText`); one found goes to identity as a claim
   * (never a verified phone). Without it only phones the channel vouches for are passed on.
   */
  readonly findPhoneInText?: (text: string) => Promise<string | undefined>;
}

const DEFAULT_LEASE_MS = 15_000;
/** Messages that may wait in one conversation unless its channel says otherwise. */
const DEFAULT_MAX_WAITING = 50;
/** Why a message may be stored without a turn (`RecordedMessage.source`). */
const RECORDED_SOURCES: ReadonlySet<string> = new Set<RecordedMessage['source']>(['imported', 'owner', 'held']);
/** Messages taken over per recovery round; the rest follow in the next rounds. */
const RECOVERY_BATCH = 100;

/**
 * The one road every message travels, from every channel:
 *
 *   channel (in) → inbound (normalise, dedupe, store) → identity → inbox → turn → reply → channel (out)
 *
 * `accept` is what a channel calls; it resolves once the message is stored in the durable inbox and queued. The
 * inbox runs one turn per conversation at a time and answers the messages that arrived meanwhile together, and the
 * turn sends one reply through the channel the batch came from.
 *
 * Crash safety: each accepted message is leased to this process, and the lease is renewed while it lives. What a
 * process that died left unanswered is taken over once its lease ran out and answered once; `start` looks at once
 * and then every third of a lease. A message whose turn could not be stored is tried again with a growing wait, and
 * after `maxTurnAttempts` (counted in the store) answered with an apology without the model: a failure never loops.
 */
export class Pipeline {
  readonly #deps: TurnDependencies;
  readonly #identity: IdentityResolver;
  readonly #options: PipelineOptions;
  readonly #inbox: Inbox<AcceptedMessage>;
  readonly #channels = new Map<string, Channel>();
  /** This process, as the owner of its leases. */
  readonly #owner = newId();
  readonly #leaseMs: number;
  #timer: NodeJS.Timeout | undefined;
  #maintaining: Promise<void> = Promise.resolve();
  /** Messages accepted by this process whose first turn has not begun: no journal can hold them yet. */
  readonly #fresh = new Set<string>();
  /** Reply plans being carried out that a new message of their conversation interrupts, by conversation. */
  readonly #interruptible = new Map<string, AbortController>();
  #stopped = false;
  readonly #unwatchInbox: () => void;

  constructor(deps: TurnDependencies, identity: IdentityResolver, options: PipelineOptions) {
    this.#deps = deps;
    this.#identity = identity;
    this.#options = options;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#inbox = new Inbox({
      runBatch: (_key, batch) => this.#runBatch(batch),
      onError: (error, key) => deps.logger.error({ err: error, conversation: key }, 'turn crashed'),
      ...(options.maxConcurrentTurns === undefined ? {} : { maxRunning: options.maxConcurrentTurns }),
      // In a group chat each turn answers one sender: a batch never mixes them.
      sameBatch: (first, item) => first.inbound.conversationKind === 'direct' || first.inbound.accountId === item.inbound.accountId,
    });
    this.#unwatchInbox = deps.metrics.watchInbox(() => this.#inbox.held);
  }

  /** The context a channel is started with: its messages enter the pipeline under its own name. */
  contextFor(channel: Channel): ChannelContext {
    this.#channels.set(channel.name, channel);
    return {
      accept: (message, options) => this.accept(channel, message, options),
      conversations: (accountId, options) => this.#conversations(channel, accountId, options?.limit ?? 50),
      transcript: (accountId, conversationId, options) => this.#transcript(channel, accountId, conversationId, options?.limit ?? 200),
      reset: (accountId, conversationId) => this.#reset(channel, accountId, conversationId),
      interfaceLanguage: (accountId, hint) => this.#interfaceLanguage(channel, accountId, hint),
      record: (conversation, entries) => this.record(channel, conversation, entries),
      state: {
        get: (key) => this.#deps.store.channelState.get(channel.name, key),
        set: (key, value) => this.#deps.store.channelState.set(channel.name, key, value),
        delete: (key) => this.#deps.store.channelState.delete(channel.name, key),
      },
    };
  }

  /** Answers what crashed processes left unanswered, now and periodically, and keeps this process's leases alive. */
  start(): void {
    if (this.#timer) return;
    this.#maintain();
    this.#timer = setInterval(() => this.#maintain(), Math.max(50, Math.floor(this.#leaseMs / 3)));
    this.#timer.unref();
  }

  /**
   * Takes over nothing more, answers every queued message (its leases still renewed meanwhile) for at most
   * `graceMs` (default: as long as it takes), then stops renewing. Resolves true when everything was answered, false
   * when the grace period ran out first: the turns still running are abandoned, not cancelled, and their messages
   * keep leases that are no longer renewed, so the next process answers them (once) when the leases run out. Call
   * it after the channels stopped accepting.
   */
  async close(options: { readonly graceMs?: number } = {}): Promise<boolean> {
    this.#stopped = true;
    const drained = this.#maintaining.then(() => this.#inbox.drain());
    const done = options.graceMs === undefined ? await drained.then(() => true) : await settlesWithin(drained, options.graceMs);
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unwatchInbox();
    return done;
  }

  /**
   * Normalises, deduplicates and stores a message from `channel`, resolves who sent it, and queues it.
   * @throws ChannelError `inbound_invalid` for empty, oversized or unstorable text, or a message of another channel;
   *   `forbidden` for a direct conversation of someone else; `identity_unreachable` / `identity_unrecognised` (the
   *   message is the text to show the person) when the identity resolver cannot say who sent it. Nothing is stored then.
   */
  async accept(channel: Channel, message: InboundMessage, options: { readonly signal?: AbortSignal } = {}): Promise<Acceptance> {
    // The channel that hands the message over vouches for it: a message cannot claim another channel's accounts.
    if (message.channel !== channel.name) {
      throw new ChannelError('inbound_invalid', channel.name, `Channel ${channel.name} handed over a message of channel ${message.channel}.`);
    }
    const text = message.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', message.channel, 'The message has no text.');
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', message.channel, `The message is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    checkStorable(message, text);
    const limit = this.#options.limitAccepts;
    return limit ? limit(() => this.#store(channel, message, text, options.signal)) : this.#store(channel, message, text, options.signal);
  }

  /**
   * Stores messages in a conversation's history without a turn (see `ChannelContext.record`): who the person is is
   * decided as for `accept` (identity, and a direct conversation only for its owner), each entry is checked as an
   * inbound text is, and the new ones (by channel message id) are appended in order. No turn, no model call, no cost,
   * nothing sent; the inbox never holds them, so recovery never answers them. The next turn reads them.
   * @throws ChannelError `inbound_invalid` for an entry whose text is empty, too long or unstorable (nothing is
   *   stored then), `forbidden` / `identity_*` as `accept`.
   */
  async record(channel: Channel, conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }> {
    const checked = entries.map((entry, index) => this.#checkRecorded(channel, entry, index));
    const kind = conversation.conversationKind ?? 'direct';
    const first = checked[0];
    if (first === undefined) return { stored: 0 };
    // The conversation as a message of its person would arrive: the same identity rules apply to it.
    const message: InboundMessage = {
      channel: channel.name,
      accountId: conversation.accountId,
      displayName: conversation.displayName ?? null,
      conversationId: conversation.conversationId,
      text: first.text,
      conversationKind: kind,
    };
    checkStorable(message, first.text);
    const participant = this.#deps.cache.participant(participantKey(channel, message)) ?? (await this.#join(channel, message, first.text, kind, newId())).participant;
    const { user, session } = participant;
    // In a group each user message keeps its sender, so later turns label it for the model as they label the others.
    const sender = kind === 'shared' ? { userId: user.id, name: conversation.displayName ?? user.displayName } : undefined;
    const stored = await this.#deps.store.recorded.append(
      { channel: channel.name, conversationId: conversation.conversationId, sessionId: session.id, accountNamespace: accountNamespaceOf(channel), accountId: conversation.accountId, userId: user.id },
      checked.map((entry) => ({
        role: entry.role,
        audience: 'display',
        content: entry.text,
        channelMessageId: entry.messageId,
        meta: { recorded: entry.source, messageId: entry.messageId, at: entry.at.toISOString(), ...(sender !== undefined && entry.role === 'user' ? { sender } : {}) },
      })),
    );
    if (stored.length > 0) {
      // The next turn reads the history afresh from the store, these messages included.
      this.#deps.cache.forgetHistory(session.id);
      for (const entry of stored) this.#deps.metrics.recordedMessages.inc({ channel: channel.name, source: String(entry.meta?.['recorded'] ?? 'imported') });
    }
    this.#deps.logger.info({ channel: channel.name, conversationId: conversation.conversationId, sessionId: session.id, stored: stored.length, known: checked.length - stored.length }, 'messages recorded without a turn');
    return { stored: stored.length };
  }

  /** A recorded entry under the inbound rules: trimmed text, not empty, not too long, storable; a valid time. */
  #checkRecorded(channel: Channel, entry: RecordedMessage, index: number): RecordedMessage {
    const where = `Recorded entry ${index} (message ${entry.messageId})`;
    const text = entry.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', channel.name, `${where} has no text.`);
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', channel.name, `${where} is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    if (unstorableReason(text) !== undefined || unstorableReason(entry.messageId) !== undefined) {
      throw new ChannelError('inbound_invalid', channel.name, `${where} holds a NUL character or a broken unicode surrogate; send plain text.`);
    }
    if (!entry.messageId) throw new ChannelError('inbound_invalid', channel.name, `Recorded entry ${index} has no message id.`);
    if (entry.role !== 'user' && entry.role !== 'assistant') throw new ChannelError('inbound_invalid', channel.name, `${where} has role ${String(entry.role)}; user or assistant.`);
    if (!RECORDED_SOURCES.has(entry.source)) throw new ChannelError('inbound_invalid', channel.name, `${where} has source ${String(entry.source)}; imported, owner or held.`);
    if (!(entry.at instanceof Date) || Number.isNaN(entry.at.getTime())) throw new ChannelError('inbound_invalid', channel.name, `${where} has no valid time.`);
    return { ...entry, text };
  }

  async #store(channel: Channel, message: InboundMessage, text: string, signal: AbortSignal | undefined): Promise<Acceptance> {
    // A conversation that floods faster than it is answered: refused before anything is stored.
    const maxWaiting = channel.inbox?.maxWaiting ?? DEFAULT_MAX_WAITING;
    if (this.#inbox.waiting(conversationKey(message.channel, message.conversationId)) >= maxWaiting) {
      throw new ChannelError('busy', message.channel, `Too many messages are waiting in this conversation (at most ${maxWaiting}); wait for the answer.`);
    }
    const kind = message.conversationKind ?? 'direct';
    const correlationId = message.correlationId ?? newId();
    const phone = await this.#phoneOf(message, text);
    const cached = this.#deps.cache.participant(participantKey(channel, message));
    // A phone goes through identity (it may change who this is), unless it is a claim that could not change anything.
    const phoneMatters = phone !== undefined && (phone.verified || (cached?.user.phone ?? null) === null);
    const joined = cached && !phoneMatters ? { participant: cached } : await this.#join(channel, message, text, kind, correlationId, phone);
    const { participant } = joined;

    const result = await this.#deps.store.transaction(async (tx) => {
      const accepted = await tx.inbound.accept(
        {
          channel: message.channel,
          conversationId: message.conversationId,
          accountId: message.accountId,
          accountNamespace: accountNamespaceOf(channel),
          userId: participant.user.id,
          sessionId: participant.session.id,
          text,
          messageId: message.messageId ?? null,
          dedupeKey: message.dedupeKey ?? null,
          correlationId,
          languageHint: message.languageHint ?? null,
          displayName: message.displayName ?? null,
          conversationKind: kind,
        },
        { owner: this.#owner, leaseMs: this.#leaseMs },
      );
      if (accepted.accepted) await tx.sessions.setStatus(participant.session.id, 'running');
      return accepted;
    });
    if (!result.accepted) {
      this.#deps.metrics.duplicates.inc();
      this.#deps.logger.info({ correlationId: result.existing.correlationId, channel: message.channel, dedupeKey: message.dedupeKey }, 'duplicate inbound message ignored');
      const answered = await this.#storedReply(result.existing);
      return { status: 'duplicate', correlationId: result.existing.correlationId, ...(answered ? { answered } : {}) };
    }
    if (joined.phone?.status === 'conflict') await this.#tellPhoneConflict(channel, message, participant, correlationId);
    this.#fresh.add(result.record.id);
    this.#queue(channel, participant, result.record, signal);
    // The person wrote again while a reply plan of the conversation runs (`interruptOnNewMessage`): its rest is dropped.
    this.#interruptible.get(conversationKey(result.record.channel, result.record.conversationId))?.abort();
    return { status: 'accepted', correlationId, sessionId: participant.session.id, userId: participant.user.id };
  }

  #queue(channel: Channel, participant: Participant, inbound: InboundRecord, signal: AbortSignal | undefined): void {
    this.#inbox.submit(conversationKey(inbound.channel, inbound.conversationId), { channel, ...participant, inbound, signal }, quietWindowOf(channel));
  }

  /**
   * The phone a message carries: one the channel vouches for (a shared contact of the sender's own) is verified; a
   * number found in the text is only a claim.
   */
  async #phoneOf(message: InboundMessage, text: string): Promise<{ readonly raw: string; readonly verified: boolean } | undefined> {
    if (message.phone) return { raw: message.phone, verified: true };
    const found = await this.#options.findPhoneInText?.(text);
    return found === undefined ? undefined : { raw: `+${found}`, verified: false };
  }

  /**
   * First message of an account in a conversation, or one that carries a phone: who it is (identity), and whether the
   * conversation is theirs.
   */
  async #join(
    channel: Channel,
    message: InboundMessage,
    text: string,
    kind: 'direct' | 'shared',
    correlationId: string,
    phone?: { readonly raw: string; readonly verified: boolean },
  ): Promise<{ readonly participant: Participant; readonly phone?: PhoneLinkOutcome }> {
    // Identity knows accounts by their namespace: channels that see the same people share it.
    const claim: AccountClaim = {
      channel: accountNamespaceOf(channel),
      accountId: message.accountId,
      displayName: message.displayName ?? null,
      ...(phone === undefined ? {} : { phone: phone.raw, phoneVerified: phone.verified }),
    };
    if (kind === 'direct') {
      // Someone else's conversation is refused before anything is created for the stranger.
      const existing = await this.#deps.store.sessions.findByConversation(message.channel, message.conversationId);
      if (existing && (await this.#identity.find(claim))?.user.id !== existing.userId) throw this.#refuseStranger(message);
    }
    const identity = await this.#resolveIdentity(claim, message, correlationId);
    const { user, accounts } = identity;
    if (identity.phone !== undefined) this.#notePhone(identity.phone, claim.channel, message, correlationId);
    const session = await this.#deps.store.transaction(async (tx) => {
      const session = await tx.sessions.open({ userId: user.id, channel: message.channel, conversationId: message.conversationId });
      // Set once, from the first input with text; never changed later.
      const title = session.title === null ? titleFrom(text) : '';
      if (title !== '') await tx.sessions.setTitle(session.id, title, { ifUntitled: true });
      return session;
    });
    // A direct conversation is its opener's (and their linked accounts'): nobody else writes into it or reads it.
    // (Checked again: two people may have opened the same new conversation at once.)
    if (kind === 'direct' && session.userId !== user.id) throw this.#refuseStranger(message);
    const participant = { user, accounts, session };
    // Remembered only after the checks: a refused or rolled-back first contact must not be cached.
    this.#deps.cache.rememberParticipant(participantKey(channel, message), participant);
    return identity.phone === undefined ? { participant } : { participant, phone: identity.phone };
  }

  /** Logs what became of a phone (never the number) and forgets who the account was, when that changed. */
  #notePhone(outcome: PhoneLinkOutcome, namespace: string, message: InboundMessage, correlationId: string): void {
    const where = { correlationId, channel: message.channel, accountId: message.accountId };
    switch (outcome.status) {
      case 'relinked':
        // Other conversations of this account, on every channel of its namespace (other processes are told).
        this.#deps.cache.forgetAccount(namespace, message.accountId);
        this.#deps.logger.info({ ...where, fromUserId: outcome.fromUserId, toUserId: outcome.toUserId }, 'account relinked to the owner of its verified phone');
        return;
      case 'conflict':
        this.#deps.logger.warn(where, 'phone link refused: the verified phone belongs to another user (identity.phones.onConflict is conflict)');
        return;
      case 'invalid':
        this.#deps.logger.info({ ...where, reason: outcome.reason }, 'phone not linked: not a valid number');
        return;
      case 'set':
        this.#deps.logger.info(where, 'phone set');
        return;
      default:
        return;
    }
  }

  /**
   * Tells the person their verified phone could not be linked, before the reply to their message. Sent straight
   * through the channel, not through the outbox: after a crash it may be lost or, on a redelivery, sent again.
   */
  async #tellPhoneConflict(channel: Channel, message: InboundMessage, participant: Participant, correlationId: string): Promise<void> {
    const language = await this.#interfaceLanguage(channel, message.accountId, message.languageHint);
    const text = systemText(language, 'identity.phoneConflict', undefined, this.#deps.agent.defaultLanguage);
    const target = {
      channel: message.channel,
      conversationId: message.conversationId,
      accountId: message.accountId,
      inReplyTo: message.messageId ? [message.messageId] : [],
      correlationId,
      sessionId: participant.session.id,
    };
    try {
      await channel.send(target, text);
    } catch (error) {
      this.#deps.logger.warn({ err: error, correlationId, channel: message.channel }, 'could not send the phone conflict notice');
    }
  }

  /**
   * Who sent the message. When the resolver cannot tell (its directory is unreachable, or names nobody), the message
   * is refused with a short text in the person's language for the channel to pass on: nothing is answered under a
   * guessed identity, and the refusal is logged with the message's correlation id.
   */
  async #resolveIdentity(claim: AccountClaim, message: InboundMessage, correlationId: string): Promise<ResolvedIdentity> {
    try {
      return await this.#identity.resolve(claim);
    } catch (error) {
      if (!(error instanceof IdentityError)) throw error;
      this.#deps.logger.warn(
        { err: error, correlationId, channel: message.channel, conversationId: message.conversationId, accountId: message.accountId, failure: error.failure },
        'message refused: the identity resolver could not say who sent it',
      );
      const text = systemText(message.languageHint, error.failure === 'unreachable' ? 'identity.unavailable' : 'identity.unrecognised', undefined, this.#deps.agent.defaultLanguage);
      throw new ChannelError(error.code, message.channel, text, { cause: error });
    }
  }

  #refuseStranger(message: InboundMessage): ChannelError {
    this.#deps.logger.warn({ channel: message.channel, conversationId: message.conversationId, accountId: message.accountId }, 'message into another user\'s conversation refused');
    return new ChannelError('forbidden', message.channel, 'This conversation belongs to someone else.');
  }

  async #storedReply(record: InboundRecord): Promise<StoredReply | undefined> {
    if (record.state !== 'answered' || record.replySeq === null) return undefined;
    const reply = await this.#deps.store.messages.findBySeq(record.sessionId, record.replySeq);
    if (!reply) return undefined;
    const errorId = reply.meta?.['errorId'];
    return {
      sessionId: record.sessionId,
      correlationId: record.correlationId,
      replyMessageId: reply.id,
      // A reply plan that sent nothing is answered by its audit record, and a planned message may never have gone
      // out: the person is given neither.
      text: reply.audience === 'display' && !wasNotSent(reply.meta) ? reply.content : '',
      status: reply.meta?.['error'] === true ? 'failed' : 'completed',
      ...(typeof errorId === 'string' ? { errorId } : {}),
    };
  }

  async #runBatch(handedOver: readonly [AcceptedMessage, ...AcceptedMessage[]]): Promise<void> {
    const lease = { owner: this.#owner, leaseMs: this.#leaseMs };
    // A turn a crash cut off resumes with the batch it started with; the other messages wait for the next turn.
    // Messages this process just accepted belong to no turn yet: only others need the store's word.
    const fresh = handedOver.map((item) => this.#fresh.delete(item.inbound.id)).every(Boolean);
    let formed: Awaited<ReturnType<typeof formBatch>>;
    try {
      if (await this.#held(handedOver)) return;
      formed = fresh ? { messages: handedOver, later: [] } : await formBatch(this.#deps.store, handedOver, lease);
    } catch (error) {
      this.#deps.logger.error({ err: error, correlationId: handedOver[0].inbound.correlationId }, 'could not read the inbox; trying the turn again shortly');
      await this.#retryLater(handedOver);
      return;
    }
    const { messages: formedBatch, resume, later } = formed;
    later.forEach((item) => this.#queue(item.channel, item, item.inbound, item.signal));
    if (formedBatch === undefined) return;
    const { due, exhausted } = byAttempts(formedBatch, this.#options.maxTurnAttempts ?? DEFAULT_MAX_TURN_ATTEMPTS);
    if (isNonEmpty(exhausted)) await this.#giveUp(exhausted, exhausted.length === formedBatch.length ? resume : undefined);
    if (isNonEmpty(due)) await this.#answer(due, due.length === formedBatch.length ? resume : undefined);
  }

  /**
   * Whether an operator paused the conversation: then its messages stay stored and queued, leased to nobody, and
   * no turn answers them until it is resumed (see {@link answerHeld}). Asked of the store when the turn is about to
   * start (after the quiet window), so a pause made by any process holds it; a turn already running finishes.
   */
  async #held(batch: readonly [AcceptedMessage, ...AcceptedMessage[]]): Promise<boolean> {
    const first = batch[0].inbound;
    const session = await this.#deps.store.sessions.findById(first.sessionId);
    if (session?.pausedAt == null) return false;
    // The store decides again in one statement: a resume since the read above lets the turn run after all.
    const held = await this.#deps.store.inbound.hold(batch.map((item) => item.inbound.id));
    if (held === 0) return false;
    this.#deps.logger.info({ correlationId: first.correlationId, sessionId: first.sessionId, held }, 'conversation paused by an operator: messages stored, held until it is resumed');
    return true;
  }

  /**
   * Answers the held messages of a resumed conversation here, together in one turn (as the inbox answers what
   * arrived during a turn). Resolves how many were taken: none when the conversation's channel does not run in this
   * process (a process running it answers them in its next recovery round) or they are answered already.
   */
  async answerHeld(session: Pick<Session, 'id' | 'channel'>): Promise<number> {
    if (this.#stopped || !this.#channels.has(session.channel)) return 0;
    const records = await this.#deps.store.inbound.claimExpired({ owner: this.#owner, leaseMs: this.#leaseMs, channels: [session.channel], limit: RECOVERY_BATCH, sessionId: session.id });
    await this.#queueRecovered(records, 'answering messages held while the conversation was paused');
    return records.length;
  }

  /** The channel of that name, when it runs in this process. */
  runningChannel(name: string): Channel | undefined {
    return this.#channels.get(name);
  }

  /** The lease this process holds its outbox parts and inbox messages under (renewed while it runs). */
  get lease(): { readonly owner: string; readonly leaseMs: number } {
    return { owner: this.#owner, leaseMs: this.#leaseMs };
  }

  async #answer(batch: readonly [AcceptedMessage, ...AcceptedMessage[]], resume: TurnRequest['resume']): Promise<void> {
    const lease = { owner: this.#owner, leaseMs: this.#leaseMs };
    const first = batch[0];
    if (batch.length > 1) {
      this.#deps.logger.info({ correlationId: first.inbound.correlationId, joined: batch.slice(1).map((item) => item.inbound.correlationId) }, 'messages answered together');
    }
    if (resume) this.#deps.logger.warn({ correlationId: first.inbound.correlationId, turnId: resume.id }, 'resuming a turn a stopped process left unfinished');
    const stop = this.#deps.metrics.turnSeconds.startTimer();
    const key = conversationKey(first.inbound.channel, first.inbound.conversationId);
    let plan: AbortController | undefined;
    const interrupt = () => {
      plan = new AbortController();
      this.#interruptible.set(key, plan);
      return plan.signal;
    };
    const interruptible = this.#deps.replies.actions.interruptOnNewMessage;
    const outcome = await runTurn(this.#deps, { messages: batch, lease, ...(resume ? { resume } : {}), ...(interruptible ? { interrupt } : {}) }).finally(() => {
      if (plan !== undefined && this.#interruptible.get(key) === plan) this.#interruptible.delete(key);
    });
    const seconds = stop();
    if (!outcome) {
      await this.#retryLater(batch);
      return;
    }
    this.#deps.logger.info(
      { correlationId: outcome.correlationId, sessionId: outcome.sessionId, status: outcome.status, ms: Math.round(seconds * 1000), inputTokens: outcome.usage.inputTokens, outputTokens: outcome.usage.outputTokens, cost: outcome.usage.cost },
      'turn finished',
    );
  }

  /**
   * Nothing could be stored (the database failed or refused the turn): the messages stay in the inbox and are tried
   * again after a backoff, the attempt counted in the store first (by this process while it runs; by the next one,
   * through their leases and once the backoff passed, if it stops first).
   */
  async #retryLater(batch: readonly AcceptedMessage[]): Promise<void> {
    const attempts = Math.max(...batch.map((item) => item.inbound.attempts));
    const delayMs = retryDelayMs(this.#leaseMs, attempts);
    try {
      await this.#deps.store.inbound.retryLater(batch.map((item) => item.inbound.id), delayMs);
    } catch (error) {
      this.#deps.logger.error({ err: error, correlationId: batch[0]?.inbound.correlationId }, 'could not record a failed turn attempt; trying again anyway');
    }
    const retry = setTimeout(() => {
      // Checked when it fires: a Palaver closed meanwhile leaves them to its successor.
      if (!this.#stopped) batch.forEach((item) => this.#queue(item.channel, item, { ...item.inbound, attempts: item.inbound.attempts + 1 }, undefined));
    }, delayMs);
    retry.unref();
  }

  /**
   * Messages whose turns failed `maxTurnAttempts` times: answered with the stored apology, without the model. When
   * not even that can be stored, they are marked abandoned so nobody takes them again; when the database cannot
   * even do that, they are tried again later (still without the model).
   */
  async #giveUp(batch: readonly [AcceptedMessage, ...AcceptedMessage[]], resume: TurnRequest['resume']): Promise<void> {
    const ids = batch.map((item) => item.inbound.id);
    const where = { correlationId: batch[0].inbound.correlationId, joined: batch.slice(1).map((item) => item.inbound.correlationId), attempts: batch[0].inbound.attempts };
    const outcome = await runTurn(this.#deps, { messages: batch, lease: { owner: this.#owner, leaseMs: this.#leaseMs }, attemptsExhausted: true, ...(resume ? { resume } : {}) });
    if (!outcome) {
      try {
        await this.#deps.store.inbound.markAbandoned(ids);
      } catch (error) {
        this.#deps.logger.error({ ...where, err: error }, 'could not give up on a message; trying again later');
        await this.#retryLater(batch);
        return;
      }
      this.#deps.logger.error(where, 'message abandoned: neither an answer nor an apology could be stored');
      // Not left `running`: the conversation's last turn failed.
      for (const sessionId of new Set(batch.map((item) => item.inbound.sessionId))) {
        await this.#deps.store.sessions.setStatus(sessionId, 'failed').catch((error: unknown) => this.#deps.logger.warn({ ...where, err: error }, 'could not mark the session failed'));
      }
    }
    this.#deps.metrics.turnsAbandoned.inc(batch.length);
  }

  /** One round of lease renewal and recovery; rounds never overlap. */
  #maintain(): void {
    this.#maintaining = this.#maintaining.then(async () => {
      try {
        const { inbound, deliveries } = this.#deps.store;
        await inbound.renewLeases(this.#owner, this.#leaseMs);
        await deliveries.renewLeases(this.#owner, this.#leaseMs);
        if (this.#stopped) return;
        const claimed = await inbound.claimExpired({ owner: this.#owner, leaseMs: this.#leaseMs, channels: [...this.#channels.keys()], limit: RECOVERY_BATCH });
        await this.#queueRecovered(claimed, 'answering a message left unanswered by a stopped process');
        const offline = [...this.#channels.values()].filter((channel) => channel.capabilities.offlineDelivery).map((channel) => channel.name);
        const unsent = await deliveries.claimExpired({ owner: this.#owner, leaseMs: this.#leaseMs, channels: offline, limit: RECOVERY_BATCH });
        await this.#resendAll(unsent);
      } catch (error) {
        this.#deps.logger.error({ err: error }, 'inbox recovery failed; trying again shortly');
      }
    });
  }

  /**
   * Queues messages taken over from the store (a process that died left them unanswered, or a paused conversation
   * held them), each conversation's together so that one turn answers them.
   */
  async #queueRecovered(records: readonly InboundRecord[], why: string): Promise<void> {
    const byConversation = new Map<string, AcceptedMessage[]>();
    for (const record of records) {
      const item = await this.#recovered(record);
      if (!item) continue;
      this.#deps.logger.warn({ correlationId: record.correlationId, channel: record.channel, conversationId: record.conversationId, receivedAt: record.receivedAt }, why);
      const key = conversationKey(record.channel, record.conversationId);
      byConversation.set(key, [...(byConversation.get(key) ?? []), item]);
    }
    for (const [key, items] of byConversation) this.#inbox.submitAll(key, items, quietWindowOf(items[0]!.channel));
  }

  /** A message taken over from the store, as the inbox holds it; undefined when its channel, user or session is gone. */
  async #recovered(record: InboundRecord): Promise<AcceptedMessage | undefined> {
    const channel = this.#channels.get(record.channel);
    const [user, session] = await Promise.all([this.#deps.store.users.findById(record.userId), this.#deps.store.sessions.findById(record.sessionId)]);
    if (!channel || !user || !session) return undefined;
    const accounts = (await this.#deps.store.users.listAccounts(user.id)).map(({ channel: name, accountId }) => ({ channel: name, accountId }));
    return { channel, user, accounts, session, inbound: record, signal: undefined };
  }

  /**
   * Sends the outbox parts one recovery round took, in their order. When the channel asks to wait for one, it and
   * the later parts of its conversation in this round are postponed together; other conversations go on.
   */
  async #resendAll(parts: readonly DeliveryRecord[]): Promise<void> {
    const conversationOf = (part: DeliveryRecord) => `${part.channel}\u0000${part.conversationId}`;
    const held = new Set<string>();
    for (const [index, part] of parts.entries()) {
      const conversation = conversationOf(part);
      if (held.has(conversation)) continue;
      const retryAfterMs = await this.#resend(part);
      if (retryAfterMs === undefined) continue;
      held.add(conversation);
      const waiting = parts.slice(index).filter((later) => conversationOf(later) === conversation);
      await postponeParts(this.#deps, this.#deps.logger.child({ correlationId: part.correlationId }), waiting, retryAfterMs, 'the channel asked to wait');
    }
  }

  /**
   * Sends a reply part from the outbox (one a process that died stored but never sent, or one postponed), under the
   * key its first attempt had, and marks it. Resolves with the wait the channel asked for, if it asked.
   */
  async #resend(part: DeliveryRecord): Promise<number | undefined> {
    const channel = this.#channels.get(part.channel);
    if (!channel) return undefined;
    const target = { channel: part.channel, conversationId: part.conversationId, accountId: part.accountId, inReplyTo: part.inReplyTo, correlationId: part.correlationId, sessionId: part.sessionId };
    const log = this.#deps.logger.child({ correlationId: part.correlationId });
    log.warn({ channel: part.channel, part: part.part }, 'sending a reply part from the outbox (left unsent by a stopped process, or postponed; a reply plan\'s waits and typing are not replayed)');
    try {
      if (part.reaction) {
        // A reply plan's reaction: carried out once like a message (a plan's waits and typing are not replayed).
        if (!channel.capabilities.reactions || !channel.react) {
          await this.#deps.store.deliveries.markFailed(part.id, 'skipped: the channel shows no reactions');
          return undefined;
        }
        await channel.react(target, part.reaction.messageId, part.reaction.emoji);
        await this.#deps.store.deliveries.markSent(part.id, part.reaction.messageId);
        return undefined;
      }
      const sent = await channel.send(target, part.text, { deliveryKey: part.id, ...(part.replyTo ? { replyTo: part.replyTo } : {}) });
      await this.#deps.store.deliveries.markSent(part.id, sent.messageId);
      return undefined;
    } catch (error) {
      if (error instanceof ChannelRetryLaterError) return error.retryAfterMs;
      log.error({ err: error, channel: part.channel }, 'could not send a recovered reply part');
      await this.#deps.store.deliveries.markFailed(part.id, error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }

  /** `/reset`: the model sees the conversation afresh from here; the Responses chain goes, the role as config says. */
  async #reset(channel: Channel, accountId: string, conversationId: string): Promise<void> {
    const { store, cache } = this.#deps;
    const session = await this.#ownSession(channel, accountId, conversationId);
    await store.sessions.resetContext(session.id);
    cache.forgetHistory(session.id);
    await updateUserState(store.userState, session.userId, (state) => resetUserState(state, this.#deps.agent.resetKeepsRole));
    cache.forgetState(session.userId);
  }

  /** The interface language of the person behind an account: their profile's, else the channel's hint, else the default. */
  async #interfaceLanguage(channel: Channel, accountId: string, hint: string | undefined): Promise<string> {
    const user = await this.#deps.store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user) return hint ?? this.#deps.agent.defaultLanguage;
    // Read as a turn reads it (cache, store, or seeded from the hint once): a later turn sees the same language.
    return (await loadProfile(this.#deps, user.id, hint ?? null, newId())).preferences.interfaceLanguage;
  }

  /** The session of a conversation, if it belongs to the account. */
  async #ownSession(channel: Channel, accountId: string, conversationId: string): Promise<Session> {
    const { store } = this.#deps;
    const session = await store.sessions.findByConversation(channel.name, conversationId);
    if (!session) throw new ChannelError('not_found', channel.name, 'There is no such conversation.');
    const user = await store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user || user.id !== session.userId) throw new ChannelError('forbidden', channel.name, 'This conversation belongs to someone else.');
    return session;
  }

  async #conversations(channel: Channel, accountId: string, limit: number): Promise<readonly ConversationSummary[]> {
    const user = await this.#deps.store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user) return [];
    const sessions = await this.#deps.store.sessions.listByUser(user.id, limit);
    return sessions
      .filter((session) => session.channel === channel.name)
      .map((session) => ({ conversationId: session.conversationId, title: session.title, status: session.status, updatedAt: session.updatedAt }));
  }

  async #transcript(channel: Channel, accountId: string, conversationId: string, limit: number): Promise<readonly TranscriptEntry[]> {
    const { store } = this.#deps;
    const session = await this.#ownSession(channel, accountId, conversationId);
    const [stored, queued] = await Promise.all([store.messages.listRecent(session.id, { limit, audience: 'display' }), store.inbound.listQueued(session.id)]);
    return [
      ...stored.flatMap((message): TranscriptEntry[] =>
        (message.role === 'user' || message.role === 'assistant') && !wasNotSent(message.meta) ? [{ id: message.id, role: message.role, text: message.content, at: writtenAt(message) }] : [],
      ),
      // Accepted, not answered yet: the person sees their message.
      ...queued.map((record): TranscriptEntry => ({ id: record.id, role: 'user', text: record.text, at: record.receivedAt })),
    ];
  }
}

/** Refuses a message whose text or ids a database cannot store exactly, on every back end. */
function checkStorable(message: InboundMessage, text: string): void {
  const fields: [string, string | null | undefined][] = [
    ['text', text],
    ['account id', message.accountId],
    ['conversation id', message.conversationId],
    ['message id', message.messageId],
    ['dedupe key', message.dedupeKey],
    ['display name', message.displayName],
    ['language hint', message.languageHint],
    ['correlation id', message.correlationId],
  ];
  for (const [name, value] of fields) {
    if (value !== undefined && value !== null && unstorableReason(value) !== undefined) {
      throw new ChannelError('inbound_invalid', message.channel, `The ${name} holds a NUL character or a broken unicode surrogate; send plain text.`);
    }
  }
}

/** The namespace identity binds a channel's accounts under: channels that see the same people share one. */
export function accountNamespaceOf(channel: Channel): string {
  return channel.accountNamespace ?? channel.name;
}

function participantKey(channel: Channel, message: { readonly accountId: string; readonly conversationId: string }): ParticipantKey {
  return { namespace: accountNamespaceOf(channel), accountId: message.accountId, channel: channel.name, conversationId: message.conversationId };
}

/** When a message was written: a recorded one keeps the messenger's time (`meta.at`), the others are stored as they come. */
function writtenAt(message: { readonly createdAt: Date; readonly meta: Readonly<Record<string, unknown>> | null }): Date {
  const at = message.meta?.['at'];
  if (typeof at !== 'string') return message.createdAt;
  const parsed = new Date(at);
  return Number.isNaN(parsed.getTime()) ? message.createdAt : parsed;
}

function isNonEmpty<T>(items: readonly T[]): items is readonly [T, ...T[]] {
  return items.length > 0;
}

/** When a channel's conversation may start its next turn (`Channel.inbox`). */
function quietWindowOf(channel: Channel): QuietWindow {
  const quietWindowMs = channel.inbox?.quietWindowMs ?? 0;
  return { quietWindowMs, maxWaitMs: channel.inbox?.maxWaitMs ?? quietWindowMs * 4 };
}

function conversationKey(channel: string, conversationId: string): string {
  return `${channel}\u0000${conversationId}`;
}

/** Longest session title, in characters (code points), the ellipsis included. */
export const MAX_TITLE_CHARS = 255;

/**
 * A session's title from its first input: the first line with text, cut on a word boundary with an ellipsis when it
 * is longer than {@link MAX_TITLE_CHARS} (a hard cut when the line has no space late enough, e.g. Chinese text).
 * Empty when the input has no text, so a later input may give the title instead.
 */
export function titleFrom(text: string): string {
  const line = text.split(/\r?\n/).map((candidate) => candidate.trim()).find((candidate) => candidate !== '') ?? '';
  const chars = [...line];
  if (chars.length <= MAX_TITLE_CHARS) return line;
  const head = chars.slice(0, MAX_TITLE_CHARS - 1);
  const nextIsSpace = /\s/u.test(chars[MAX_TITLE_CHARS - 1]!);
  const lastSpace = head.findLastIndex((char) => /\s/u.test(char));
  // A word boundary in the first half would throw away too much: then the cut goes mid-word.
  const cut = nextIsSpace ? head : lastSpace >= MAX_TITLE_CHARS / 2 ? head.slice(0, lastSpace) : head;
  return `${cut.join('').trimEnd()}…`;
}
