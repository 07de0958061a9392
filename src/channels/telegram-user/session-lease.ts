import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelLease, ChannelLeaseRepository } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';

/** How long a lease lasts without renewal: a crashed holder's session is free again after this. */
export const SESSION_LEASE_TTL_MS = 30_000;

/** This process's holder id, `host:pid:instance` (instance: several holders in one process, e.g. tests). */
export function holderId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** `host:pid:instance` read back for messages; a holder id of another shape is shown as it is. */
export function parseHolder(holder: string): { readonly host: string; readonly pid: number | undefined; readonly instance: string | undefined } {
  const match = /^(.*):(\d+):([^:]*)$/.exec(holder);
  return match ? { host: match[1]!, pid: Number(match[2]), instance: match[3] } : { host: holder, pid: undefined, instance: undefined };
}

/** "process 4242 on host web-1 since 2026-11-27T08:01:02.000Z (lease until …)". */
export function describeLease(lease: ChannelLease): string {
  const { host, pid } = parseHolder(lease.holder);
  const who = pid === undefined ? `"${lease.holder}"` : `process ${pid} on host ${host}`;
  return `${who} since ${new Date(lease.acquiredAt).toISOString()} (its lease runs out at ${new Date(lease.expiresAt).toISOString()} unless it renews it)`;
}

/** Another live process holds the session: starting here would get AUTH_KEY_DUPLICATED from Telegram. */
export class SessionLeaseHeldError extends ChannelError {
  override readonly name = 'SessionLeaseHeldError';
  readonly lease: ChannelLease;

  constructor(lease: ChannelLease, doing: string) {
    super(
      'session_in_use',
      lease.channel,
      `Cannot ${doing}: the Telegram user account's session is in use by ${describeLease(lease)}. ` +
        'One MTProto session must run in one process only (Telegram answers AUTH_KEY_DUPLICATED and may end the session): stop that process first.',
    );
    this.lease = lease;
  }
}

export interface SessionLeaseOptions {
  readonly leases: ChannelLeaseRepository;
  /** Lease key; default `telegram-user`. */
  readonly channel?: string;
  readonly holder?: string;
  readonly ttlMs?: number;
  /** Default a third of `ttlMs`: two renewals may fail before the lease runs out. */
  readonly renewEveryMs?: number;
  readonly now?: () => number;
  readonly logger?: Logger;
  /**
   * Called once when a renewal finds the lease taken (this process stalled past its lease and another took over):
   * the holder must stop using the session at once.
   */
  readonly onLost?: (lease: ChannelLease | undefined) => void;
  /** What the refusal message says was refused: default "start the Telegram user account". */
  readonly doing?: string;
}

/**
 * The database lease that keeps one MTProto session in one process: `palaver start` holds it while the channel
 * runs, and `palaver telegram logout|status|sync` hold it for their short connection. Renewed on a timer that does
 * not keep Node running; `release()` frees it at once for the next process.
 *
 * @example
 * const lease = await SessionLease.acquire({ leases: store.channelLeases, logger });
 * try { … } finally { await lease.release(); }
 */
export class SessionLease {
  readonly channel: string;
  readonly holder: string;
  readonly #options: SessionLeaseOptions;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #released = false;
  #lost = false;
  #renewing: Promise<void> | undefined;

  private constructor(options: SessionLeaseOptions, channel: string, holder: string) {
    this.#options = options;
    this.channel = channel;
    this.holder = holder;
    this.#ttlMs = options.ttlMs ?? SESSION_LEASE_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Takes the session's lease (free, expired, or already this holder's) and starts renewing it.
   * @throws SessionLeaseHeldError naming the live holder (host, pid, since when).
   */
  static async acquire(options: SessionLeaseOptions): Promise<SessionLease> {
    const lease = new SessionLease(options, options.channel ?? TELEGRAM_USER_CHANNEL, options.holder ?? holderId());
    const taken = await options.leases.claim({ channel: lease.channel, holder: lease.holder, now: lease.#now(), ttlMs: lease.#ttlMs });
    if (taken.holder !== lease.holder) throw new SessionLeaseHeldError(taken, options.doing ?? 'start the Telegram user account');
    lease.#schedule();
    return lease;
  }

  /** The live lease of the session, if a process holds one (expired leases are free, so not returned). */
  static async current(leases: ChannelLeaseRepository, options: { readonly channel?: string; readonly now?: number } = {}): Promise<ChannelLease | undefined> {
    const lease = await leases.get(options.channel ?? TELEGRAM_USER_CHANNEL);
    return lease !== undefined && lease.expiresAt > (options.now ?? Date.now()) ? lease : undefined;
  }

  /** Whether this process still holds the lease (false after `release()` or once a renewal found it taken). */
  get held(): boolean {
    return !this.#released && !this.#lost;
  }

  /** Renews now (the timer does this by itself); false when the lease was lost. */
  async renew(): Promise<boolean> {
    if (!this.held) return false;
    const renewed = await this.#options.leases.renew({ channel: this.channel, holder: this.holder, now: this.#now(), ttlMs: this.#ttlMs });
    if (!renewed && this.held) {
      this.#lost = true;
      this.#stop();
      const current = await this.#options.leases.get(this.channel).catch(() => undefined);
      this.#options.logger?.error({ channel: this.channel, holder: this.holder, takenBy: current?.holder }, 'session lease lost to another process: stopping the session here');
      this.#options.onLost?.(current);
    }
    return renewed;
  }

  /** Stops renewing and frees the lease. Safe to call twice. */
  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#stop();
    await this.#renewing?.catch(() => undefined);
    await this.#options.leases.release(this.channel, this.holder);
  }

  #schedule(): void {
    const every = this.#options.renewEveryMs ?? Math.max(1, Math.floor(this.#ttlMs / 3));
    this.#timer = setInterval(() => {
      if (this.#renewing) return;
      this.#renewing = this.renew()
        .then(() => undefined)
        // A database hiccup: the next tick tries again, with two more chances before the lease runs out.
        .catch((error: unknown) => this.#options.logger?.warn({ err: error, channel: this.channel }, 'session lease renewal failed; retrying'))
        .finally(() => {
          this.#renewing = undefined;
        });
    }, every);
    this.#timer.unref();
  }

  #stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
