import { addressGroup } from '../platform/address-group.js';

export interface SignInLimiterOptions {
  /** Failed sign-ins an address may make per window before it is refused. Default 5. */
  readonly maxFailures?: number;
  /** The window, in milliseconds, counted from an address's first failure. Default 15 minutes. */
  readonly windowMs?: number;
  /**
   * Addresses counted on their own at once (about 100 bytes each). Beyond it, new addresses share one count until
   * the oldest windows end. Default 10,000.
   */
  readonly maxAddresses?: number;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  readonly now?: () => number;
}

interface Count {
  count: number;
  readonly since: number;
}

/** The key of the shared count of addresses that found the table full; never a real address. */
const OVERFLOW = 'overflow';

/**
 * Counts failed admin sign-ins (a wrong bearer token or a wrong token on the dashboard's form) per client address,
 * so guessing the admin token from one address stops after a few tries: once `maxFailures` fail within `windowMs`,
 * that address is refused until the window ends, right token or not. A success does not clear the count (it would
 * let a guesser who also holds the token reset it). An IPv6 address counts by its /64, which one host can hold whole.
 *
 * Bounded without letting an attacker erase a lock: a count leaves the table only when its window ends, never to
 * make room. When `maxAddresses` are counted, further addresses share one extra count, so an attacker with more
 * addresses than the table holds gets at most `(maxAddresses + 1) × maxFailures` guesses per window; the price is
 * that, once that shared count is spent, an address not yet counted waits for the window too. Memory stays at
 * `maxAddresses + 1` entries. The counts live in this process: each process of a cluster counts its own.
 */
export class SignInLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;
  /** In order of each count's start, which is also the order their windows end. */
  readonly #failures = new Map<string, Count>();

  constructor(options: SignInLimiterOptions = {}) {
    this.#maxFailures = options.maxFailures ?? 5;
    this.#windowMs = options.windowMs ?? 15 * 60 * 1000;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Seconds until `address` may try again, or 0 when it may try now. */
  retryAfterSeconds(address: string): number {
    this.#forgetEnded();
    const entry = this.#failures.get(this.#keyOf(address));
    if (entry === undefined || entry.count < this.#maxFailures) return 0;
    return Math.max(1, Math.ceil((entry.since + this.#windowMs - this.#now()) / 1000));
  }

  /** Records a failed sign-in from `address`. */
  fail(address: string): void {
    this.#forgetEnded();
    const key = this.#keyOf(address);
    const entry = this.#failures.get(key);
    if (entry === undefined) this.#failures.set(key, { count: 1, since: this.#now() });
    else entry.count += 1;
  }

  /** The address's own count when it has one or there is room for one, else the shared count. */
  #keyOf(address: string): string {
    const key = addressGroup(address);
    const ownCounts = this.#failures.size - (this.#failures.has(OVERFLOW) ? 1 : 0);
    return this.#failures.has(key) || ownCounts < this.#maxAddresses ? key : OVERFLOW;
  }

  /** Drops counts whose window has ended: they are at the front, so this costs one look when none has. */
  #forgetEnded(): void {
    const now = this.#now();
    for (const [key, entry] of this.#failures) {
      if (entry.since + this.#windowMs > now) return;
      this.#failures.delete(key);
    }
  }
}
