import { DEFAULT_LEASE_TIMINGS, HeldLease, holderId, type LeaseTimings } from '../../platform/held-lease.js';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelLease, ChannelLeaseRepository } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';

export { holderId };

/** How long a lease lasts without renewal: a crashed holder's session is free again after this. */
export const SESSION_LEASE_TTL_MS = DEFAULT_LEASE_TIMINGS.ttlMs;

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
  /** Default 2500 ms (`DEFAULT_LEASE_TIMINGS`, the same as the bot's polling lease). */
  readonly ttlMs?: number;
  /** Default 1000 ms, or a third of `ttlMs` when that is shorter. */
  readonly renewEveryMs?: number;
  /**
   * How long `acquire` waits for a lease another process holds, trying every `retryEveryMs`: a holder that crashed
   * (its lease no longer renewed) is then taken over as soon as its lease runs out, instead of refusing the start.
   * Default 0: refuse at once.
   */
  readonly waitMs?: number;
  /** Default 500 ms. */
  readonly retryEveryMs?: number;
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

/** The lease timings `options` asks for, the defaults filling in the rest. */
export function sessionLeaseTimings(options: Pick<SessionLeaseOptions, 'ttlMs' | 'renewEveryMs' | 'retryEveryMs'>): LeaseTimings {
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_TIMINGS.ttlMs;
  return {
    ttlMs,
    renewEveryMs: options.renewEveryMs ?? Math.max(1, Math.min(DEFAULT_LEASE_TIMINGS.renewEveryMs, Math.floor(ttlMs / 3))),
    retryEveryMs: options.retryEveryMs ?? DEFAULT_LEASE_TIMINGS.retryEveryMs,
  };
}

/**
 * The database lease that keeps one MTProto session in one process: `palaver start` holds it while the channel
 * runs, and `palaver telegram logout|status|sync` hold it for their short connection. The same lease as the bot's
 * polling lease (`HeldLease`, same timings): renewed about every second, run out 2.5 s after the last renewal, so a
 * start after a crash (`waitMs`) gets the session within about 3 s; `release()` frees it at once.
 *
 * @example
 * const lease = await SessionLease.acquire({ leases: store.channelLeases, logger });
 * try { … } finally { await lease.release(); }
 */
export class SessionLease {
  readonly #held: HeldLease;

  private constructor(held: HeldLease) {
    this.#held = held;
  }

  get channel(): string {
    return this.#held.key;
  }

  get holder(): string {
    return this.#held.holder;
  }

  /**
   * Takes the session's lease (free, expired, or already this holder's) and starts renewing it; with `waitMs`,
   * waits that long for another holder's lease to run out.
   * @throws SessionLeaseHeldError naming the live holder (host, pid, since when).
   */
  static async acquire(options: SessionLeaseOptions): Promise<SessionLease> {
    const held = {
      leases: options.leases,
      key: options.channel ?? TELEGRAM_USER_CHANNEL,
      holder: options.holder ?? holderId(),
      timings: sessionLeaseTimings(options),
      ...(options.now ? { now: options.now } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.onLost ? { onLost: options.onLost } : {}),
    };
    const now = options.now ?? Date.now;
    const deadline = now() + (options.waitMs ?? 0);
    for (let attempt = 0; ; attempt++) {
      const outcome = await HeldLease.tryAcquire(held);
      if ('lease' in outcome) return new SessionLease(outcome.lease);
      if (now() >= deadline) throw new SessionLeaseHeldError(outcome.heldBy, options.doing ?? 'start the Telegram user account');
      if (attempt === 0)
        options.logger?.info(
          { heldBy: outcome.heldBy.holder, until: new Date(outcome.heldBy.expiresAt).toISOString() },
          'the Telegram session lease is held by another process; waiting for it to run out',
        );
      await new Promise((resolve) => setTimeout(resolve, Math.min(held.timings.retryEveryMs, Math.max(1, deadline - now()))));
    }
  }

  /** The live lease of the session, if a process holds one (expired leases are free, so not returned). */
  static async current(leases: ChannelLeaseRepository, options: { readonly channel?: string; readonly now?: number } = {}): Promise<ChannelLease | undefined> {
    const lease = await leases.get(options.channel ?? TELEGRAM_USER_CHANNEL);
    return lease !== undefined && lease.expiresAt > (options.now ?? Date.now()) ? lease : undefined;
  }

  /** Whether this process still holds the lease (false after `release()` or once a renewal found it taken). */
  get held(): boolean {
    return this.#held.held;
  }

  /** Renews now (the timer does this by itself); false when the lease was lost. */
  renew(): Promise<boolean> {
    return this.#held.renew();
  }

  /** Stops renewing and frees the lease. Safe to call twice. */
  release(): Promise<void> {
    return this.#held.release();
  }
}
