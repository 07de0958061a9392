import { HeldLease, type LeaseTimings } from '../../platform/held-lease.js';
import type { ChannelError } from '../../domain/errors.js';
import type { ChannelLeaseRepository } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import type { DurablePoller } from './polling.js';

export interface LeasedPollingOptions {
  readonly leases: ChannelLeaseRepository;
  /** The lease's key, per bot: `telegram-bot:poll:<bot id>`. */
  readonly key: string;
  readonly timings: LeaseTimings;
  /** Builds the poller of one term as poller, guarded by `lease`, with `ended` to call when it stops by itself. */
  readonly createPoller: (lease: HeldLease, ended: { readonly leaseLost: () => void; readonly fatal: (error: ChannelError) => void }) => DurablePoller;
  readonly logger: Logger;
  readonly now?: () => number;
}

type TermEnd = { readonly kind: 'lease_lost' } | { readonly kind: 'fatal'; readonly error: ChannelError } | { readonly kind: 'stopped' };

/**
 * Long polling when several Palaver processes serve one bot on one database: Telegram allows one `getUpdates` at a
 * time per token, so one process polls while it holds the polling lease (`channel_leases`, renewed about every
 * second); the others stand by and try to take it every `retryEveryMs`. A poller that is killed stops renewing and
 * is replaced once its lease runs out (`ttlMs + retryEveryMs`, 3 s with the defaults); one that stops gracefully
 * releases it, and a standby takes over at its next try. A poller that stalled past its lease (paused) learns it at
 * its next renewal or `getUpdates`, whichever comes first, and stops polling before asking Telegram again; it then
 * stands by like the others.
 *
 * The offset travels in the channel state: each poller starts from the offset the last one saved, so an update the
 * dead poller fetched but had not yet confirmed is fetched again and the inbox dedupes it (by message id, in one
 * database), while one it never stored is not lost.
 */
export class LeasedPolling {
  readonly #options: LeasedPollingOptions;
  readonly #stopping = new AbortController();
  #poller: DurablePoller | undefined;
  #lease: HeldLease | undefined;
  #loop: Promise<void> | undefined;
  #endTerm: ((end: TermEnd) => void) | undefined;

  constructor(options: LeasedPollingOptions) {
    this.#options = options;
  }

  /**
   * Polls at once when the lease is free (a conflict or a refused token then fails the start, as with one
   * process), else stands by in the background.
   * @throws ChannelError `conflict` or `unauthorized` from the first poll.
   */
  async start(): Promise<void> {
    const first = await HeldLease.tryAcquire(this.#leaseOptions());
    if ('lease' in first) {
      const { ended } = await this.#beginTerm(first.lease);
      this.#loop = this.#run(ended);
    } else {
      this.#standingBy(first.heldBy.holder);
      this.#loop = this.#run(undefined);
    }
  }

  /** Stops polling or standing by and releases the lease at once, for another process. Safe to call twice. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#endTerm?.({ kind: 'stopped' });
    await this.#loop;
  }

  /** Whether this process polls right now (false while it stands by). */
  get isPolling(): boolean {
    return this.#poller?.isPolling ?? false;
  }

  /** Whether this process holds the polling lease right now. */
  get holdsLease(): boolean {
    return this.#lease?.held ?? false;
  }

  /** Each term: hold the lease, poll until it is lost (or the process stops), stand by again. */
  async #run(ended: Promise<TermEnd> | undefined): Promise<void> {
    const signal = this.#stopping.signal;
    for (;;) {
      if (ended) {
        const end = await ended;
        await this.#endCurrentTerm();
        if (end.kind === 'stopped') return;
        if (end.kind === 'fatal') {
          this.#options.logger.error(
            { err: end.error, code: end.error.code },
            `telegram polling stopped: ${end.error.message} Replies to messages already accepted are still sent.`,
          );
          return;
        }
        this.#options.logger.warn(
          { key: this.#options.key },
          'telegram polling lease lost (this process stalled past it): another process polls now; standing by',
        );
      }
      const lease = await HeldLease.standBy(this.#leaseOptions(), signal, (heldBy) => this.#standingBy(heldBy.holder));
      if (!lease) return;
      try {
        ({ ended } = await this.#beginTerm(lease));
        this.#options.logger.info({ key: this.#options.key }, 'telegram polling taken over by this process');
      } catch (error) {
        // Its first poll failed: the same error would stop polling if this process had started first.
        await this.#endCurrentTerm();
        this.#options.logger.error({ err: error }, 'telegram polling could not start after taking the lease; this process stops polling');
        return;
      }
    }
  }

  /** Starts the poller under `lease`; resolves once it polls, with the promise of how its term ends. */
  async #beginTerm(lease: HeldLease): Promise<{ readonly ended: Promise<TermEnd> }> {
    this.#lease = lease;
    const ended = new Promise<TermEnd>((resolve) => {
      this.#endTerm = resolve;
    });
    if (this.#stopping.signal.aborted) this.#endTerm?.({ kind: 'stopped' });
    this.#poller = this.#options.createPoller(lease, {
      leaseLost: () => this.#endTerm?.({ kind: 'lease_lost' }),
      fatal: (error) => this.#endTerm?.({ kind: 'fatal', error }),
    });
    try {
      await this.#poller.start();
    } catch (error) {
      await this.#endCurrentTerm();
      throw error;
    }
    return { ended };
  }

  /** Stops the poller (the batch under way is stored or left for the next poller), then releases the lease. */
  async #endCurrentTerm(): Promise<void> {
    const poller = this.#poller;
    const lease = this.#lease;
    this.#poller = undefined;
    this.#lease = undefined;
    this.#endTerm = undefined;
    await poller?.stop();
    await lease
      ?.release()
      .catch((error: unknown) => this.#options.logger.warn({ err: error }, 'could not release the telegram polling lease; it runs out by itself'));
  }

  #leaseOptions() {
    return {
      leases: this.#options.leases,
      key: this.#options.key,
      timings: this.#options.timings,
      logger: this.#options.logger,
      ...(this.#options.now ? { now: this.#options.now } : {}),
      // Noticed by the renewal timer: stop polling at once, not only before the next getUpdates.
      onLost: () => this.#endTerm?.({ kind: 'lease_lost' }),
    };
  }

  #standingBy(holder: string): void {
    this.#options.logger.info({ key: this.#options.key, poller: holder }, 'another process polls Telegram for this bot; standing by to take over');
  }
}
