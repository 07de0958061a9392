import type { ToolOutboxEntry, ToolOutboxRepository } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';
import type { RedisConnection } from './redis-connection.js';

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

/**
 * Moves one runtime's tool outbox to the workers' stream: `publish` puts an entry on the stream at once (XADD, field
 * `data`) and stamps it published; a sweep publishes what is still due (Redis was unreachable) and notices when
 * Redis lost its data. A marker key with a TTL the sweep renews tells: when it is gone, the server restarted empty
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
    await this.#publishDue();
    const sweepMs = this.#options.sweepMs ?? 1_000;
    this.#timer = setInterval(() => void this.sweep(), sweepMs);
    this.#timer.unref();
  }

  /**
   * Puts one entry on the stream and stamps it published. A failure (Redis unreachable) is logged and leaves the
   * entry due: the sweep publishes it later.
   */
  async publish(entry: Pick<ToolOutboxEntry, 'callKey' | 'attempt' | 'payload'>): Promise<boolean> {
    const id = `${entry.callKey}#${entry.attempt}`;
    if (this.#publishing.has(id) || this.#closed) return false;
    this.#publishing.add(id);
    try {
      await this.#options.redis.client.xAdd(this.#streamKey, '*', { data: entry.payload });
      await this.#options.outbox.markPublished(entry.callKey, entry.attempt);
      return true;
    } catch (error) {
      this.#options.logger.warn({ err: error, callKey: entry.callKey, attempt: entry.attempt }, 'tool call not published yet; the relay retries');
      return false;
    } finally {
      this.#publishing.delete(id);
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
  }

  async #sweepOnce(): Promise<void> {
    if (this.#closed) return;
    try {
      // PEXPIRE answers false for a key that is not there: the marker's absence is how a restart shows.
      const renewed = await this.#options.redis.client.pExpire(this.#markerKey, this.#markerTtlMs);
      if (!renewed) await this.#recoverLostData();
      await this.#publishDue();
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
    for (const entry of await this.#options.outbox.list(this.#options.responseChannel, { dueOnly: false, limit: 10_000 })) {
      if (entry.deadline < this.#now()) continue;
      await this.publish(entry);
      count += 1;
    }
    if (count > 0) this.#options.onRepublished?.(count);
  }

  async #publishDue(): Promise<void> {
    for (;;) {
      const due = await this.#options.outbox.list(this.#options.responseChannel, { dueOnly: true, limit: BATCH });
      const open = due.filter((entry) => !this.#publishing.has(`${entry.callKey}#${entry.attempt}`));
      const published = await Promise.all(open.map((entry) => this.publish(entry)));
      // A batch that did not all go out (Redis unreachable, or others publishing it): the next sweep tries again.
      if (due.length < BATCH || this.#closed || published.some((ok) => !ok)) return;
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
