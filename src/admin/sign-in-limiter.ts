import { LRUCache } from 'lru-cache';

export interface SignInLimiterOptions {
  /** Failed sign-ins an address may make per window before it is refused. Default 5. */
  readonly maxFailures?: number;
  /** The window, in milliseconds, counted from an address's first failure. Default 15 minutes. */
  readonly windowMs?: number;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  readonly now?: () => number;
}

/**
 * Counts failed dashboard sign-ins per client address, so guessing the admin token from one address stops after a
 * few tries: once `maxFailures` fail within `windowMs`, that address is refused until the window ends, right token
 * or not. A success does not clear the count (it would let a guesser who also holds the token reset it). The table
 * is bounded: the least recently seen addresses are forgotten first.
 */
export class SignInLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #failures = new LRUCache<string, { count: number; since: number }>({ max: 10_000 });

  constructor(options: SignInLimiterOptions = {}) {
    this.#maxFailures = options.maxFailures ?? 5;
    this.#windowMs = options.windowMs ?? 15 * 60 * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Seconds until `address` may try again, or 0 when it may try now. */
  retryAfterSeconds(address: string): number {
    const entry = this.#current(address);
    if (entry === undefined || entry.count < this.#maxFailures) return 0;
    return Math.max(1, Math.ceil((entry.since + this.#windowMs - this.#now()) / 1000));
  }

  /** Records a failed sign-in from `address`. */
  fail(address: string): void {
    const entry = this.#current(address);
    if (entry === undefined) this.#failures.set(address, { count: 1, since: this.#now() });
    else entry.count += 1;
  }

  #current(address: string): { count: number; since: number } | undefined {
    const entry = this.#failures.get(address);
    if (entry !== undefined && entry.since + this.#windowMs <= this.#now()) {
      this.#failures.delete(address);
      return undefined;
    }
    return entry;
  }
}
