import type { InboundRecord, Session } from '../../domain/model.js';
import type { Channel } from '../../domain/ports/channel.js';
import type { Inbox } from '../inbox.js';
import type { AcceptedMessage, TurnDependencies } from '../turn/turn-context.js';
import { conversationKey, quietWindowOf } from './keys.js';
import { RECOVERY_BATCH, type ProcessLease } from './lease.js';
import type { ConversationOwnership } from './conversation-ownership.js';
import type { OutboxResend } from './outbox-resend.js';
import type { ProcessRegistry } from './process-registry.js';

/** What lease maintenance and recovery need. */
export interface LeaseRecoveryOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'logger'>;
  /** The lease this process renews, and takes expired messages and outbox parts over under. */
  readonly lease: ProcessLease;
  /** Where taken-over messages are queued for their turns. */
  readonly inbox: Inbox<AcceptedMessage>;
  /** The channels running in this process, by name: only their messages and parts are taken over. */
  readonly channels: ReadonlyMap<string, Channel>;
  /** The conversation claims of this process's running turns, renewed with its leases. */
  readonly ownership: Pick<ConversationOwnership, 'renew'>;
  /** This process's record among the processes on the database. */
  readonly registry: Pick<ProcessRegistry, 'register' | 'beat'>;
  /** How often a round runs (the heartbeat); at most a third of a lease. */
  readonly heartbeatMs: number;
  /** Sends the outbox parts a round took over. */
  readonly outbox: Pick<OutboxResend, 'resendAll'>;
  /** Whether the pipeline is closing: leases are still renewed then, but nothing more is taken over. */
  readonly isStopped: () => boolean;
  /** The clock messages' arrival (`receivedAt`) is read against: the store's, `Date.now` unless a test says otherwise. */
  readonly now?: () => number;
}

/**
 * The heartbeat: keeps this process's leases and claims alive and takes over what a process that died left: its
 * unanswered messages (queued for a turn) and its unsent outbox parts (sent again). `start` registers the process
 * (retiring processes whose heartbeat stopped, whose work is then free at once), runs a round, and then one every
 * `heartbeatMs`.
 */
export class LeaseRecovery {
  readonly #deps: LeaseRecoveryOptions['deps'];
  readonly #lease: ProcessLease;
  readonly #inbox: Inbox<AcceptedMessage>;
  readonly #channels: ReadonlyMap<string, Channel>;
  readonly #outbox: LeaseRecoveryOptions['outbox'];
  readonly #ownership: LeaseRecoveryOptions['ownership'];
  readonly #registry: LeaseRecoveryOptions['registry'];
  readonly #heartbeatMs: number;
  #registered = false;
  readonly #isStopped: () => boolean;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #maintaining: Promise<void> = Promise.resolve();

  constructor(options: LeaseRecoveryOptions) {
    this.#deps = options.deps;
    this.#lease = options.lease;
    this.#inbox = options.inbox;
    this.#channels = options.channels;
    this.#outbox = options.outbox;
    this.#ownership = options.ownership;
    this.#registry = options.registry;
    this.#heartbeatMs = options.heartbeatMs;
    this.#isStopped = options.isStopped;
    this.#now = options.now ?? Date.now;
  }

  /** Runs a round now and then every heartbeat (at most a third of a lease, at least 50 ms); a second call does nothing. */
  start(): void {
    if (this.#timer) return;
    this.#maintain();
    this.#timer = setInterval(() => this.#maintain(), Math.max(50, Math.min(this.#heartbeatMs, Math.floor(this.#lease.leaseMs / 3))));
    this.#timer.unref();
  }

  /** Stops the rounds: the leases are no longer renewed. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Settles when the round running now (if any) is over. */
  get settled(): Promise<void> {
    return this.#maintaining;
  }

  /** See `Pipeline.answerHeld`. */
  async answerHeld(session: Pick<Session, 'id' | 'channel'>): Promise<number> {
    if (this.#isStopped() || !this.#channels.has(session.channel)) return 0;
    const { owner, leaseMs } = this.#lease;
    const records = await this.#deps.store.inbound.claimExpired({ owner, leaseMs, channels: [session.channel], limit: RECOVERY_BATCH, sessionId: session.id });
    await this.#queueRecovered(records, 'answering messages held while the conversation was paused');
    return records.length;
  }

  /** One round of lease renewal and recovery; rounds never overlap. */
  #maintain(): void {
    this.#maintaining = this.#maintaining.then(async () => {
      try {
        const { inbound, deliveries } = this.#deps.store;
        const { owner, leaseMs } = this.#lease;
        // Registered in the first round that reaches the database, before anything is taken over.
        if (!this.#registered) {
          await this.#registry.register();
          this.#registered = true;
        }
        // Renewals first, through the heartbeat's own connection (Store.heartbeat): a pool busy with turns must not
        // let this process's leases lapse, or others would take its work over and ignore its budget claims.
        const { heartbeat } = this.#deps.store;
        await this.#registry.beat();
        await heartbeat.inbound.renewLeases(owner, leaseMs);
        await heartbeat.deliveries.renewLeases(owner, leaseMs);
        await this.#ownership.renew();
        if (this.#isStopped()) return;
        const claimed = await inbound.claimExpired({ owner, leaseMs, channels: [...this.#channels.keys()], limit: RECOVERY_BATCH });
        await this.#queueRecovered(claimed, 'answering a message left unanswered by a stopped process');
        const offline = [...this.#channels.values()].filter((channel) => channel.capabilities.offlineDelivery).map((channel) => channel.name);
        const unsent = await deliveries.claimExpired({ owner, leaseMs, channels: offline, limit: RECOVERY_BATCH });
        await this.#outbox.resendAll(unsent);
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
      this.#deps.logger.warn(
        { correlationId: record.correlationId, channel: record.channel, conversationId: record.conversationId, receivedAt: record.receivedAt },
        why,
      );
      const key = conversationKey(record.channel, record.conversationId);
      byConversation.set(key, [...(byConversation.get(key) ?? []), item]);
    }
    // Their quiet window counts from their arrival: a message whose window passed while its process lay dead is
    // answered at once, not made to wait a fresh window after every restart.
    const now = this.#now();
    for (const [key, items] of byConversation) {
      const ages = items.map((item) => now - item.inbound.receivedAt.getTime());
      this.#inbox.submitAll(key, items, quietWindowOf(items[0]!.channel), { newestMsAgo: Math.min(...ages), oldestMsAgo: Math.max(...ages) });
    }
  }

  /** A message taken over from the store, as the inbox holds it; undefined when its channel, user or session is gone. */
  async #recovered(record: InboundRecord): Promise<AcceptedMessage | undefined> {
    const channel = this.#channels.get(record.channel);
    const [user, session] = await Promise.all([this.#deps.store.users.findById(record.userId), this.#deps.store.sessions.findById(record.sessionId)]);
    if (!channel || !user || !session) return undefined;
    const accounts = (await this.#deps.store.users.listAccounts(user.id)).map(({ channel: name, accountId }) => ({ channel: name, accountId }));
    return { channel, user, accounts, session, inbound: record, signal: undefined };
  }
}
