import { addressGroup } from '../../platform/address-group.js';

/** `channels.web.limits`: what one browser caller (a visitor or a token user) and one client address may hold. */
export interface VisitorLimitOptions {
  /** Runs (open `/agui` requests) one caller may have at once. */
  readonly runsPerVisitor: number;
  /** Runs all browser callers from one address may have at once; 0: no limit. */
  readonly runsPerAddress: number;
  /** New conversations one caller may start in an hour. */
  readonly newConversationsPerHourPerVisitor: number;
  /** New conversations all browser callers from one address may start in an hour; 0: no limit. */
  readonly newConversationsPerHourPerAddress: number;
  /** Chat pages all callers from one address may hold open between runs; 0: no limit (see ConversationEvents). */
  readonly openPagesPerAddress?: number | undefined;
}

export const DEFAULT_VISITOR_LIMITS: VisitorLimitOptions = {
  runsPerVisitor: 4,
  runsPerAddress: 16,
  newConversationsPerHourPerVisitor: 20,
  newConversationsPerHourPerAddress: 100,
};

const HOUR_MS = 3_600_000;
/** Conversations remembered as the caller's own (a later run in them starts nothing new), across callers. */
const MAX_KNOWN_CONVERSATIONS = 100_000;
/** Callers and addresses with a recent new conversation kept before the oldest are swept for expired entries. */
const SWEEP_AT = 50_000;

/** Which limit refused: the caller's own, or its address's. */
export type LimitRefusal = {
  readonly ok: false;
  readonly limit: 'runs' | 'conversations';
  readonly scope: 'visitor' | 'address';
  readonly retryAfterSeconds: number;
};

/**
 * The web channel's per-caller limits, kept in this process's memory (each process counts its own clients):
 *
 * - **Runs at once**: a run holds its slot from before its message is accepted until its stream closes (the reply
 *   ended, or the client left).
 * - **New conversations an hour**: a sliding window. A run in a conversation this process has seen the caller use
 *   passes; one in a conversation it has not seen is counted as new while the caller is under the limit, and at the
 *   limit is refused only once the store says the conversation does not exist (`exists`), so a conversation
 *   continued after a restart is never refused.
 *
 * Addresses are grouped as a client holds them: an IPv4 address alone, an IPv6 address by its /64 (one household or
 * one host's range), an IPv4-mapped IPv6 address as its IPv4 address.
 */
export class VisitorLimits {
  readonly #options: VisitorLimitOptions;
  readonly #now: () => number;
  readonly #runs = new Map<string, number>();
  readonly #started = new Map<string, number[]>();
  /** `caller\0conversation` of conversations seen in use, oldest first (a Set keeps insertion order). */
  readonly #known = new Set<string>();

  constructor(options: VisitorLimitOptions, now: () => number = Date.now) {
    this.#options = options;
    this.#now = now;
  }

  /**
   * Takes a run slot for `caller` from `address`, or says which limit refuses it. `release` gives the slot back
   * (safe to call twice).
   */
  openRun(caller: string, address: string | undefined): { readonly ok: true; readonly release: () => void } | LimitRefusal {
    const visitorKey = `v:${caller}`;
    const addressKey = this.#options.runsPerAddress > 0 && address !== undefined ? `a:${addressGroup(address)}` : undefined;
    if ((this.#runs.get(visitorKey) ?? 0) >= this.#options.runsPerVisitor) return { ok: false, limit: 'runs', scope: 'visitor', retryAfterSeconds: 5 };
    if (addressKey !== undefined && (this.#runs.get(addressKey) ?? 0) >= this.#options.runsPerAddress)
      return { ok: false, limit: 'runs', scope: 'address', retryAfterSeconds: 5 };
    const keys = addressKey === undefined ? [visitorKey] : [visitorKey, addressKey];
    for (const key of keys) this.#runs.set(key, (this.#runs.get(key) ?? 0) + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        for (const key of keys) {
          const left = (this.#runs.get(key) ?? 1) - 1;
          if (left <= 0) this.#runs.delete(key);
          else this.#runs.set(key, left);
        }
      },
    };
  }

  /**
   * Whether `caller` may run in `conversationId`: a conversation seen before passes; a new one is counted (and
   * `undo` takes it back when its message was not accepted). At a limit, `exists` asks the store whether the
   * conversation is there after all (continued after a restart): then it passes uncounted.
   */
  async startConversation(
    caller: string,
    address: string | undefined,
    conversationId: string,
    exists: () => Promise<boolean>,
  ): Promise<{ readonly ok: true; readonly undo: () => void } | LimitRefusal> {
    const known = `${caller}\u0000${conversationId}`;
    if (this.#known.has(known)) return { ok: true, undo: () => {} };
    const keys = [`v:${caller}`];
    const limits = [this.#options.newConversationsPerHourPerVisitor];
    if (this.#options.newConversationsPerHourPerAddress > 0 && address !== undefined) {
      keys.push(`a:${addressGroup(address)}`);
      limits.push(this.#options.newConversationsPerHourPerAddress);
    }
    const now = this.#now();
    const full = keys.findIndex((key, index) => this.#recent(key, now).length >= limits[index]!);
    if (full !== -1) {
      if (!(await exists())) {
        const oldest = this.#recent(keys[full]!, this.#now())[0] ?? now;
        return {
          ok: false,
          limit: 'conversations',
          scope: full === 0 ? 'visitor' : 'address',
          retryAfterSeconds: Math.max(1, Math.ceil((oldest + HOUR_MS - this.#now()) / 1000)),
        };
      }
      this.#remember(known);
      return { ok: true, undo: () => {} };
    }
    // Counted at once, before any await: parallel runs of one caller cannot all slip under the limit.
    for (const key of keys) this.#started.set(key, [...this.#recent(key, now), now]);
    if (this.#started.size > SWEEP_AT) this.#sweep(now);
    this.#remember(known);
    let undone = false;
    return {
      ok: true,
      undo: () => {
        if (undone) return;
        undone = true;
        this.#known.delete(known);
        for (const key of keys) {
          const times = this.#started.get(key);
          const index = times?.lastIndexOf(now) ?? -1;
          if (times && index !== -1) times.splice(index, 1);
        }
      },
    };
  }

  /** The caller's (or address's) new conversations of the last hour, oldest first. */
  #recent(key: string, now: number): number[] {
    const times = this.#started.get(key);
    if (times === undefined) return [];
    const recent = times.filter((at) => at > now - HOUR_MS);
    if (recent.length === 0) this.#started.delete(key);
    else if (recent.length !== times.length) this.#started.set(key, recent);
    return recent;
  }

  #remember(known: string): void {
    this.#known.add(known);
    if (this.#known.size <= MAX_KNOWN_CONVERSATIONS) return;
    const oldest = this.#known.values().next().value;
    if (oldest !== undefined) this.#known.delete(oldest);
  }

  /** Drops callers whose new conversations all lie more than an hour back. */
  #sweep(now: number): void {
    for (const key of [...this.#started.keys()]) this.#recent(key, now);
  }
}
