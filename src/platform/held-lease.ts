import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { ChannelLease, ChannelLeaseRepository } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';

/**
 * How a lease that only one process may hold is kept: its holder renews it every `renewEveryMs`, and it runs out
 * `ttlMs` after the last renewal; a process standing by tries to take it every `retryEveryMs`. A holder killed
 * without a word is thus replaced within `ttlMs + retryEveryMs` (3 s with the defaults).
 */
export interface LeaseTimings {
  /** How long the lease lasts without renewal. Default 2500 ms. */
  readonly ttlMs: number;
  /** How often its holder renews it. Default 1000 ms: a renewal may fail (a database hiccup) before it runs out. */
  readonly renewEveryMs: number;
  /** How often a process standing by tries to take it. Default 500 ms. */
  readonly retryEveryMs: number;
}

export const DEFAULT_LEASE_TIMINGS: LeaseTimings = { ttlMs: 2_500, renewEveryMs: 1_000, retryEveryMs: 500 };

/**
 * A channel's `lease` settings in the config (the bot's polling, the user account's MTProto session): the timings
 * above, with the defaults, refused when one failed renewal would lose the lease. See docs/telegram-several-processes.md.
 */
export const leaseSchema = z
  .strictObject({
    ttlMs: z.number().int().min(200).max(600_000).default(2_500),
    renewEveryMs: z.number().int().min(50).max(300_000).default(1_000),
    retryEveryMs: z.number().int().min(50).max(300_000).default(500),
  })
  .refine((lease) => lease.renewEveryMs * 2 <= lease.ttlMs, {
    message: 'renewEveryMs must be at most half of ttlMs, so that one failed renewal does not lose the lease',
    path: ['renewEveryMs'],
  })
  .prefault({});

/** The longest a lease stays with a holder that died without releasing it, until another process has it. */
export function takeoverBoundMs(timings: LeaseTimings): number {
  return timings.ttlMs + timings.retryEveryMs;
}

/** This process's holder id, `host:pid:instance` (instance: several holders in one process, e.g. tests). */
export function holderId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

export interface HeldLeaseOptions {
  readonly leases: ChannelLeaseRepository;
  /** The lease's key (a row of `channel_leases`), e.g. `telegram-user` or `telegram-bot:poll:<bot id>`. */
  readonly key: string;
  /** Default `holderId()`. */
  readonly holder?: string;
  readonly timings?: Partial<LeaseTimings>;
  /** Epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
  /**
   * Called once when this process learns it lost the lease (it stalled past `ttlMs`, e.g. paused, and another
   * process took it over): whatever the lease guards must stop here at once.
   */
  readonly onLost?: (current: ChannelLease | undefined) => void;
}

/**
 * A lease in `channel_leases` that this process holds: renewed on a timer that does not keep Node running,
 * `confirm()`ed before each exclusive act, released at once on a graceful stop so a process standing by takes over
 * without waiting for it to run out.
 *
 * @example
 * const lease = await HeldLease.standBy({ leases: store.channelLeases, key: 'telegram-bot:poll:42' }, signal);
 * while (await lease?.confirm()) await pollOnce();
 */
export class HeldLease {
  readonly key: string;
  readonly holder: string;
  readonly timings: LeaseTimings;
  readonly #options: HeldLeaseOptions;
  readonly #now: () => number;
  /** This process's clock time until which the lease is surely its own: when the last renewal was sent, plus ttl. */
  #validUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  #lost = false;
  #renewing: Promise<boolean> | undefined;

  private constructor(options: HeldLeaseOptions, holder: string) {
    this.#options = options;
    this.key = options.key;
    this.holder = holder;
    this.timings = { ...DEFAULT_LEASE_TIMINGS, ...options.timings };
    this.#now = options.now ?? Date.now;
  }

  /**
   * Takes the lease when it is free, expired or already this holder's, and starts renewing it.
   * @returns the held lease, or the live lease of the other holder that has it.
   */
  static async tryAcquire(options: HeldLeaseOptions): Promise<{ readonly lease: HeldLease } | { readonly heldBy: ChannelLease }> {
    const lease = new HeldLease(options, options.holder ?? holderId());
    const sentAt = lease.#now();
    const taken = await options.leases.claim({ channel: lease.key, holder: lease.holder, now: sentAt, ttlMs: lease.timings.ttlMs });
    if (taken.holder !== lease.holder) return { heldBy: taken };
    lease.#validUntil = sentAt + lease.timings.ttlMs;
    lease.#schedule();
    return { lease };
  }

  /**
   * Stands by until the lease is free, trying every `retryEveryMs`, then holds it. A failed try (the database
   * unreachable) is logged and tried again.
   * @returns the held lease, or undefined once `signal` aborted.
   */
  static async standBy(options: HeldLeaseOptions, signal: AbortSignal, onWaiting?: (heldBy: ChannelLease) => void): Promise<HeldLease | undefined> {
    const timings = { ...DEFAULT_LEASE_TIMINGS, ...options.timings };
    const holder = options.holder ?? holderId();
    let told = false;
    while (!signal.aborted) {
      try {
        const outcome = await HeldLease.tryAcquire({ ...options, holder });
        if ('lease' in outcome) {
          // Stopped while the claim was under way: the lease goes straight back.
          if (signal.aborted) {
            await outcome.lease.release().catch(() => undefined);
            return undefined;
          }
          return outcome.lease;
        }
        if (!told) onWaiting?.(outcome.heldBy);
        told = true;
      } catch (error) {
        options.logger?.warn({ err: error, key: options.key }, 'could not try to take a lease; trying again');
      }
      await delay(timings.retryEveryMs, signal);
    }
    return undefined;
  }

  /** Whether this process still holds the lease (false after `release()` or once it learnt it lost it). */
  get held(): boolean {
    return !this.#released && !this.#lost;
  }

  /**
   * True when the lease is this process's for at least half a renewal period more; else renews it first (a process
   * that was paused past its lease learns here that it lost it). Call it before each act only the holder may do.
   */
  async confirm(): Promise<boolean> {
    if (!this.held) return false;
    if (this.#now() + this.timings.renewEveryMs / 2 < this.#validUntil) return true;
    return this.renew();
  }

  /** Renews now (the timer does this by itself); false when the lease is lost. Concurrent calls share one renewal. */
  renew(): Promise<boolean> {
    if (!this.held) return Promise.resolve(false);
    this.#renewing ??= this.#renew().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #renew(): Promise<boolean> {
    const sentAt = this.#now();
    const renewed = await this.#options.leases.renew({ channel: this.key, holder: this.holder, now: sentAt, ttlMs: this.timings.ttlMs });
    if (renewed) {
      this.#validUntil = Math.max(this.#validUntil, sentAt + this.timings.ttlMs);
      return this.held;
    }
    if (this.held) {
      this.#lost = true;
      this.#stopTimer();
      const current = await this.#options.leases.get(this.key).catch(() => undefined);
      this.#options.logger?.warn(
        { key: this.key, holder: this.holder, takenBy: current?.holder },
        'lease lost to another process (this one stalled past it): stopping what it guards here',
      );
      this.#options.onLost?.(current);
    }
    return false;
  }

  /** Stops renewing and frees the lease at once, for the next process. Safe to call twice. */
  async release(): Promise<void> {
    if (this.#released) return;
    const wasLost = this.#lost;
    this.#released = true;
    this.#stopTimer();
    await this.#renewing?.catch(() => undefined);
    // Deletes only this holder's row: a lease another process took over stays theirs.
    if (!wasLost) await this.#options.leases.release(this.key, this.holder);
  }

  #schedule(): void {
    this.#timer = setInterval(() => {
      // A database hiccup: the next tick tries again, before the lease runs out.
      this.renew().catch((error: unknown) => this.#options.logger?.warn({ err: error, key: this.key }, 'lease renewal failed; retrying'));
    }, this.timings.renewEveryMs);
    this.#timer.unref();
  }

  #stopTimer(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
