import type { ToolOutboxEntry, ToolOutboxRepository } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';
import type { RedisConnection } from '../platform/redis-connection.js';

/** What the relay needs to know of the streams set-up; names are unprefixed (the connection prefixes them). */
export interface ToolOutboxRelayOptions {
  readonly redis: RedisConnection;
  readonly outbox: ToolOutboxRepository;
  /** `tools.stream`. */
  readonly stream: string;
  /** `tools.group`: created (from the stream's start) when missing, so nothing published before a worker joins is missed. */
  readonly group: string;
  /** The response channel whose entries this relay publishes: one runtime's. */
  readonly responseChannel: string;
  readonly logger: Logger;
  /** How often due entries are retried and Redis is checked for lost data. */
  readonly sweepMs?: number;
  /** Told how many entries went out again after Redis lost its data. */
  readonly onRepublished?: (count: number) => void;
  readonly now?: () => number;
}

const BATCH = 200;
const LEFT_OVER_LIMIT = 10_000;
/** Settled calls wait this long to have their outbox entries removed together (one commit for many calls). */
const REMOVE_DELAY_MS = 20;
const REMOVE_BATCH = 256;

/**
 * Moves one runtime's tool outbox to the workers' stream: `publish` puts an entry on the stream at once (XADD, field
 * `data`); an entry that could not go out (Redis unreachable) is kept in memory and the sweep publishes it later. A
 * call costs one commit of the store on its way out (the entry, in the transaction that records the call): what was
 * published is known in memory only, and the entries of settled calls are removed in batches (`settle`).
 *
 * The table is read again when it matters: at start (what an earlier run of this channel left), and when Redis lost
 * its data. A marker key with a TTL the sweep renews tells the latter: when it is gone, the server restarted empty
 * (this project's Redis keeps nothing on disk), so every entry still waiting for its result is published again and
 * the consumer group is made anew.
 */
export class ToolOutboxRelay {
  readonly #options: ToolOutboxRelayOptions;
  readonly #streamKey: string;
  readonly #markerKey: string;
  readonly #markerTtlMs: number;
  /** Entries (key and attempt) being published right now, so the sweep does not publish them twice. */
  readonly #publishing = new Set<string>();
  /** Entries whose publication failed, by call key (the latest attempt): the sweep tries them again. */
  readonly #due = new Map<string, Pick<ToolOutboxEntry, 'callKey' | 'attempt' | 'payload'>>();
  /** Settled calls whose entries are not removed yet. */
  #toRemove = new Set<string>();
  /** The batch being removed right now. */
  #removing: { readonly keys: ReadonlySet<string>; readonly done: Promise<void> } | undefined;
  #removeTimer: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;
  #closed = false;
  /** Called when Redis was found empty (before entries are published again): the response reader starts over. */
  onDataLost: () => void = () => {};

  constructor(options: ToolOutboxRelayOptions) {
    this.#options = options;
    this.#streamKey = options.redis.key(options.stream);
    this.#markerKey = options.redis.key(`tools.runtime:${options.responseChannel}`);
    this.#markerTtlMs = Math.max(10_000, (options.sweepMs ?? 1_000) * 30);
  }

  /** Makes the group and the marker, publishes what an earlier run of this channel left due, and starts sweeping. */
  async start(): Promise<void> {
    await this.#ensureGroup();
    await this.#options.redis.client.set(this.#markerKey, String(this.#now()), { expiration: { type: 'PX', value: this.#markerTtlMs } });
    await this.#publishLeftOver();
    const sweepMs = this.#options.sweepMs ?? 1_000;
    this.#timer = setInterval(() => void this.sweep(), sweepMs);
    this.#timer.unref();
  }

  /**
   * Puts one entry on the stream. A failure (Redis unreachable) is logged and keeps the entry due in memory: the
   * sweep publishes it later (and the table still holds it, should Redis come back empty).
   */
  async publish(entry: Pick<ToolOutboxEntry, 'callKey' | 'attempt' | 'payload'>): Promise<boolean> {
    const id = `${entry.callKey}#${entry.attempt}`;
    if (this.#publishing.has(id) || this.#closed) return false;
    this.#publishing.add(id);
    try {
      await this.#options.redis.client.xAdd(this.#streamKey, '*', { data: entry.payload });
      if (this.#due.get(entry.callKey)?.attempt === entry.attempt) this.#due.delete(entry.callKey);
      return true;
    } catch (error) {
      const newer = (this.#due.get(entry.callKey)?.attempt ?? 0) > entry.attempt;
      if (!newer && !this.#toRemove.has(entry.callKey)) this.#due.set(entry.callKey, entry);
      this.#options.logger.warn({ err: error, callKey: entry.callKey, attempt: entry.attempt }, 'tool call not published yet; the relay retries');
      return false;
    } finally {
      this.#publishing.delete(id);
    }
  }

  /**
   * Resolves once a call's entry may be written again: a removal of it still waiting is called off, one under way is
   * waited for (so it cannot delete the new entry).
   */
  async reopen(callKey: string): Promise<void> {
    this.#toRemove.delete(callKey);
    if (this.#removing?.keys.has(callKey)) await this.#removing.done;
  }

  /** The call is settled (answered, cancelled, given up on): its entry goes with the next batch of removals. */
  settle(callKey: string): void {
    this.#due.delete(callKey);
    this.#toRemove.add(callKey);
    if (this.#toRemove.size >= REMOVE_BATCH) void this.flushRemovals();
    else if (this.#removeTimer === undefined) {
      this.#removeTimer = setTimeout(() => void this.flushRemovals(), REMOVE_DELAY_MS);
      this.#removeTimer.unref();
    }
  }

  /** Removes the entries of settled calls now, in one statement; resolves when the table no longer holds them. */
  async flushRemovals(): Promise<void> {
    clearTimeout(this.#removeTimer);
    this.#removeTimer = undefined;
    await this.#removing?.done;
    if (this.#toRemove.size === 0) return;
    const keys = this.#toRemove;
    this.#toRemove = new Set();
    const done = this.#options.outbox.remove(...keys).catch((error: unknown) => {
      // Left in the table, they expire with their deadline (removeExpired); a Redis restart meanwhile republishes a
      // settled call, which the worker's kept result answers.
      this.#options.logger.warn({ err: error, count: keys.size }, 'tool outbox entries not removed; they expire');
    });
    this.#removing = { keys, done };
    try {
      await done;
    } finally {
      this.#removing = undefined;
    }
  }

  /** Checks Redis for lost data and publishes what is due. Runs one at a time; exposed for tests. */
  sweep(): Promise<void> {
    this.#sweeping ??= this.#sweepOnce().finally(() => (this.#sweeping = undefined));
    return this.#sweeping;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#sweeping?.catch(() => undefined);
    await this.flushRemovals();
  }

  async #sweepOnce(): Promise<void> {
    if (this.#closed) return;
    try {
      // PEXPIRE answers false for a key that is not there: the marker's absence is how a restart shows.
      // The response stream expires with the marker: a runtime that is gone leaves no stream behind.
      const [renewed] = await Promise.all([
        this.#options.redis.client.pExpire(this.#markerKey, this.#markerTtlMs),
        this.#options.redis.client.pExpire(this.#options.redis.key(this.#options.responseChannel), this.#markerTtlMs),
      ]);
      if (!renewed) await this.#recoverLostData();
      await this.#publishKeptDue();
      await this.#options.outbox.removeExpired(this.#now() - this.#markerTtlMs);
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'tool outbox sweep failed; retrying');
    }
  }

  async #recoverLostData(): Promise<void> {
    this.#options.logger.warn({ stream: this.#options.stream }, 'Redis lost its data (restarted empty?): publishing unanswered tool calls again');
    await this.#ensureGroup();
    await this.#options.redis.client.set(this.#markerKey, String(this.#now()), { expiration: { type: 'PX', value: this.#markerTtlMs } });
    this.onDataLost();
    let count = 0;
    for (const entry of await this.#options.outbox.list(this.#options.responseChannel, { dueOnly: false, limit: LEFT_OVER_LIMIT })) {
      // Expired, or settled and only waiting for its removal.
      if (entry.deadline < this.#now() || this.#toRemove.has(entry.callKey) || this.#removing?.keys.has(entry.callKey)) continue;
      await this.publish(entry);
      count += 1;
    }
    if (count > 0) this.#options.onRepublished?.(count);
  }

  /** Publishes again what failed to go out since the last sweep. */
  async #publishKeptDue(): Promise<void> {
    await Promise.all([...this.#due.values()].map((entry) => this.publish(entry)));
  }

  /**
   * At start: publishes what an earlier run of this channel left waiting (entries are not stamped published one by
   * one, so all of them; a repeat is answered from the worker's kept result). What fails stays due in memory.
   */
  async #publishLeftOver(): Promise<void> {
    const left = await this.#options.outbox.list(this.#options.responseChannel, { dueOnly: false, limit: LEFT_OVER_LIMIT });
    const now = this.#now();
    for (let start = 0; start < left.length && !this.#closed; start += BATCH) {
      await Promise.all(
        left
          .slice(start, start + BATCH)
          .filter((entry) => entry.deadline >= now)
          .map((entry) => this.publish(entry)),
      );
    }
  }

  async #ensureGroup(): Promise<void> {
    try {
      await this.#options.redis.client.xGroupCreate(this.#streamKey, this.#options.group, '0', { MKSTREAM: true });
    } catch (error) {
      if (!/BUSYGROUP/.test((error as Error).message)) throw error;
    }
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}
