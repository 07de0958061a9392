import { newId } from '../../domain/ids.js';
import type { Session } from '../../domain/model.js';
import type { Acceptance, AcceptOptions, Channel, ChannelContext, InboundMessage, RecordedConversation, RecordedMessage } from '../../domain/ports/channel.js';
import type { IdentityResolver } from '../../domain/ports/identity.js';
import { ApprovalDecisions } from '../approvals/approval-decisions.js';
import { Inbox } from '../inbox.js';
import { settlesWithin } from '../settles-within.js';
import type { AcceptedMessage, TurnDependencies } from '../turn/turn-context.js';
import { ConversationOwnership } from './conversation-ownership.js';
import { ConversationReads } from './conversation-reads.js';
import { IdentityJoin } from './identity-join.js';
import { Intake } from './intake.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, type ProcessLease } from './lease.js';
import { LeaseRecovery } from './lease-recovery.js';
import { OutboxResend } from './outbox-resend.js';
import { PersonRateLimit, type PersonLimitsSettings } from './person-rate-limit.js';
import { ProcessRegistry } from './process-registry.js';
import { RecordedIntake } from './recorded-intake.js';
import { TurnRunner } from './turn-runner.js';

/** How often a process looks for approval requests whose time ran out. */
const APPROVAL_EXPIRY_CHECK_MS = 15_000;

export interface PipelineOptions {
  /** Longest accepted inbound text in characters. */
  readonly maxInboundChars: number;
  /**
   * How long an accepted message (and a conversation claim) stays this process's without a renewal, in ms. After a
   * crash, another process answers it once the lease ran out; a restart on the same machine at once. Default 2 000.
   */
  readonly leaseMs?: number;
  /** How often this process renews its leases and looks for work a stopped process left, in ms. Default 500. */
  readonly heartbeatMs?: number;
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
  /** `limits.perPerson`: how many messages a person's turns may answer per window (default: no limit). */
  readonly perPerson?: PersonLimitsSettings | undefined;
}

/**
 * The one road every message travels, from every channel:
 *
 *   channel (in) → inbound (normalise, dedupe, store) → identity → inbox → turn → reply → channel (out)
 *
 * `accept` is what a channel calls; it resolves once the message is stored in the durable inbox and queued. The
 * inbox runs one turn per conversation at a time and answers the messages that arrived meanwhile together, and the
 * turn sends one reply through the channel the batch came from.
 *
 * Crash safety: each accepted message is leased to this process, and the lease is renewed while it lives (its
 * heartbeat). What a process that died left unanswered is taken over once its lease ran out (at once by its restart
 * on the same machine) and answered once; `start` looks at once and then every heartbeat. Several processes on one
 * database: a conversation's turn runs in one process at a time, under a claim every write of the turn checks
 * ({@link ConversationOwnership}). A message whose turn could not be stored is tried again with a growing wait, and
 * after `maxTurnAttempts` (counted in the store) answered with an apology without the model: a failure never loops.
 *
 * This class only wires its parts together: {@link Intake} and {@link RecordedIntake} take messages in (through
 * {@link IdentityJoin}), {@link TurnRunner} answers them, {@link LeaseRecovery} keeps the leases and takes over what a
 * stopped process left (sending its outbox through {@link OutboxResend}), {@link ConversationReads} serves reads.
 */
export class Pipeline {
  readonly #deps: TurnDependencies;
  readonly #inbox: Inbox<AcceptedMessage>;
  readonly #channels = new Map<string, Channel>();
  /** This process, as the owner of its leases. */
  readonly #lease: ProcessLease;
  #stopped = false;
  readonly #unwatchInbox: () => void;
  readonly #reads: ConversationReads;
  readonly #intake: Intake;
  readonly #recorded: RecordedIntake;
  readonly #turns: TurnRunner;
  readonly #recovery: LeaseRecovery;
  readonly #registry: ProcessRegistry;
  readonly #approvals: ApprovalDecisions;
  #expiry: ReturnType<typeof setInterval> | undefined;

  constructor(deps: TurnDependencies, identity: IdentityResolver, options: PipelineOptions) {
    this.#deps = deps;
    this.#lease = { owner: newId(), leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS };
    const isStopped = () => this.#stopped;
    this.#inbox = new Inbox({
      runBatch: (_key, batch) => this.#turns.runBatch(batch),
      onError: (error, key) => deps.logger.error({ err: error, conversation: key }, 'turn crashed'),
      ...(options.maxConcurrentTurns === undefined ? {} : { maxRunning: options.maxConcurrentTurns }),
      // In a group chat each turn answers one sender: a batch never mixes them.
      sameBatch: (first, item) => first.inbound.conversationKind === 'direct' || first.inbound.accountId === item.inbound.accountId,
    });
    this.#unwatchInbox = deps.metrics.watchInbox(() => this.#inbox.held);
    this.#reads = new ConversationReads(deps);
    const join = new IdentityJoin({
      deps,
      identity,
      findPhoneInText: options.findPhoneInText,
      interfaceLanguage: (channel, accountId, hint) => this.#reads.interfaceLanguage(channel, accountId, hint),
    });
    const ownership = new ConversationOwnership({
      store: deps.store,
      cache: deps.cache,
      logger: deps.logger,
      owner: this.#lease.owner,
      leaseMs: this.#lease.leaseMs,
    });
    // The heartbeat's writes go through its own connection: they must not wait behind the turns they keep alive.
    this.#registry = new ProcessRegistry({ store: deps.store.heartbeat, logger: deps.logger, id: this.#lease.owner, leaseMs: this.#lease.leaseMs });
    this.#turns = new TurnRunner({
      deps,
      inbox: this.#inbox,
      lease: this.#lease,
      ownership,
      maxTurnAttempts: options.maxTurnAttempts,
      isStopped,
      approvals: () => this.#approvals,
    });
    this.#intake = new Intake({
      deps,
      maxInboundChars: options.maxInboundChars,
      limitAccepts: options.limitAccepts,
      lease: this.#lease,
      inbox: this.#inbox,
      identity: join,
      turns: this.#turns,
      storedReply: (record) => this.#reads.storedReply(record),
      personRate: options.perPerson === undefined ? undefined : new PersonRateLimit(options.perPerson),
    });
    this.#recorded = new RecordedIntake({ deps, maxInboundChars: options.maxInboundChars, identity: join });
    this.#approvals = new ApprovalDecisions({ deps, lease: this.#lease, answerHeld: (session) => this.answerHeld(session) });
    this.#recovery = new LeaseRecovery({
      deps,
      lease: this.#lease,
      inbox: this.#inbox,
      channels: this.#channels,
      outbox: new OutboxResend({ deps, channels: this.#channels }),
      ownership,
      registry: this.#registry,
      heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      isStopped,
    });
  }

  /** The context a channel is started with: its messages enter the pipeline under its own name. */
  contextFor(channel: Channel): ChannelContext {
    this.#channels.set(channel.name, channel);
    return {
      accept: (message, options) => this.accept(channel, message, options),
      conversations: (accountId, options) => this.#reads.conversations(channel, accountId, options?.limit ?? 50),
      transcript: (accountId, conversationId, options) => this.#reads.transcript(channel, accountId, conversationId, options?.limit ?? 200),
      reset: (accountId, conversationId) => this.#reads.reset(channel, accountId, conversationId),
      storedReply: (accountId, conversationId, dedupeKey) => this.#reads.storedReplyTo(channel, accountId, conversationId, dedupeKey),
      attachment: (accountId, conversationId, attachmentId) => this.#reads.attachment(channel, accountId, conversationId, attachmentId),
      conversationState: (accountId, conversationId) => this.#reads.conversationState(channel, accountId, conversationId),
      interfaceLanguage: (accountId, hint) => this.#reads.interfaceLanguage(channel, accountId, hint),
      record: (conversation, entries) => this.record(channel, conversation, entries),
      decideApproval: (accountId, approvalId, decision, options) =>
        this.#approvals.decide(
          approvalId,
          decision,
          { kind: 'person', channel: channel.name, accountId, ...(options?.conversationId === undefined ? {} : { conversationId: options.conversationId }) },
          { messageId: options?.messageId },
        ),
      state: {
        get: (key) => this.#deps.store.channelState.get(channel.name, key),
        set: (key, value) => this.#deps.store.channelState.set(channel.name, key, value),
        delete: (key) => this.#deps.store.channelState.delete(channel.name, key),
      },
    };
  }

  /** Answers what crashed processes left unanswered, now and periodically, and keeps this process's leases alive. */
  start(): void {
    this.#recovery.start();
    // Requests nobody answered in time are declined (their turns go on), by whichever process looks first: at once
    // (some may have run out while no process ran), then every little while.
    const expire = () => {
      if (this.#stopped) return;
      this.#approvals
        .expireDue()
        .catch((error: unknown) => this.#deps.logger.error({ err: error }, 'could not expire approval requests; trying again shortly'));
    };
    expire();
    this.#expiry = setInterval(expire, APPROVAL_EXPIRY_CHECK_MS);
    this.#expiry.unref();
  }

  /** Decisions on tool calls' approval requests (operators' decisions, the expiry): see {@link ApprovalDecisions}. */
  get approvals(): ApprovalDecisions {
    return this.#approvals;
  }

  /**
   * Takes over nothing more, answers every queued message (its leases still renewed meanwhile) and finishes the
   * conversation summaries being written, for at most
   * `graceMs` (default: as long as it takes), then stops renewing. Resolves true when everything was answered, false
   * when the grace period ran out first: the turns still running are abandoned, not cancelled, and their messages
   * keep leases that are no longer renewed, so the next process answers them (once) when the leases run out. Call
   * it after the channels stopped accepting.
   */
  async close(options: { readonly graceMs?: number } = {}): Promise<boolean> {
    this.#stopped = true;
    clearInterval(this.#expiry);
    // Summaries being written after turns are part of the work: a run cut off stores nothing, and the next turn retries.
    const drained = this.#recovery.settled.then(() => this.#inbox.drain()).then(() => this.#deps.summaries?.idle());
    const done = options.graceMs === undefined ? await drained.then(() => true) : await settlesWithin(drained, options.graceMs);
    this.#recovery.stop();
    // After the last round: none stamps the heartbeat again once it is marked stopped.
    await this.#recovery.settled;
    await this.#registry.stopped();
    this.#unwatchInbox();
    return done;
  }

  /**
   * Normalises, deduplicates and stores a message from `channel`, resolves who sent it, and queues it.
   * @throws ChannelError `inbound_invalid` for empty, oversized or unstorable text, or a message of another channel;
   *   `forbidden` for a direct conversation of someone else; `identity_unreachable` / `identity_unrecognised` (the
   *   message is the text to show the person) when the identity resolver cannot say who sent it. Nothing is stored then.
   */
  accept(channel: Channel, message: InboundMessage, options: AcceptOptions = {}): Promise<Acceptance> {
    return this.#intake.accept(channel, message, options);
  }

  /**
   * Stores messages in a conversation's history without a turn (see `ChannelContext.record`): who the person is is
   * decided as for `accept` (identity, and a direct conversation only for its owner), each entry is checked as an
   * inbound text is, and the new ones (by channel message id) are appended in order. No turn, no model call, no cost,
   * nothing sent; the inbox never holds them, so recovery never answers them. The next turn reads them.
   * @throws ChannelError `inbound_invalid` for an entry whose text is empty, too long or unstorable (nothing is
   *   stored then), `forbidden` / `identity_*` as `accept`.
   */
  record(channel: Channel, conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }> {
    return this.#recorded.record(channel, conversation, entries);
  }

  /**
   * Answers the held messages of a resumed conversation here, together in one turn (as the inbox answers what
   * arrived during a turn). Resolves how many were taken: none when the conversation's channel does not run in this
   * process (a process running it answers them in its next recovery round) or they are answered already.
   */
  answerHeld(session: Pick<Session, 'id' | 'channel'>): Promise<number> {
    return this.#recovery.answerHeld(session);
  }

  /** The channel of that name, when it runs in this process. */
  runningChannel(name: string): Channel | undefined {
    return this.#channels.get(name);
  }

  /** The lease this process holds its outbox parts and inbox messages under (renewed while it runs). */
  get lease(): ProcessLease {
    return { owner: this.#lease.owner, leaseMs: this.#lease.leaseMs };
  }
}
