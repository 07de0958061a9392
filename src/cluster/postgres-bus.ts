import pg from 'pg';
import { newId } from '../domain/ids.js';
import type { ClusterBus, ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import { decodeEnvelope, encodeEnvelope } from './bus-envelope.js';
import { TopicListeners } from './topic-listeners.js';

/** Put before every topic: the NOTIFY channel of topic `cache` is `palaver_cache`. Channels are per database. */
export const POSTGRES_CHANNEL_PREFIX = 'palaver_';

export interface PostgresBusOptions {
  /** `postgres://…` of the database the processes share (NOTIFY reaches the sessions of the same database). */
  readonly url: string;
  /** The id this bus stamps on what it publishes. Default: a new id. */
  readonly processId?: string;
  readonly logger?: Logger;
  /** First wait before the listening connection is opened again after it was lost; doubles per failure. Default 100. */
  readonly minBackoffMs?: number;
  /** Longest wait between two tries to open the listening connection again. Default 5 000. */
  readonly maxBackoffMs?: number;
  /**
   * How often the listening connection runs a query to prove it is alive (a connection that died silently receives
   * nothing and says nothing). Default 10 000; 0 never.
   */
  readonly pingIntervalMs?: number;
  /** Connect and query timeout of both connections. Default 5 000. */
  readonly timeoutMs?: number;
}

/**
 * The cluster bus on PostgreSQL: LISTEN on one dedicated connection, opened again with bounded backoff when it is
 * lost (listeners are told, since what was published meanwhile is gone); NOTIFY through a pool of one connection, so
 * the messages of this process leave in the order they were published.
 * @example
 * const bus = await PostgresBus.open({ url: config.database.url, logger });
 * await bus.subscribe('cache', (message, from) => { if (from !== bus.processId) forget(message); });
 */
export class PostgresBus implements ClusterBus {
  readonly processId: string;
  readonly #options: PostgresBusOptions;
  readonly #listeners: TopicListeners;
  readonly #pool: pg.Pool;
  #listener: pg.Client | undefined;
  /** Opening, LISTEN and UNLISTEN run one after another on the listening connection. */
  #serial: Promise<unknown> = Promise.resolve();
  /** Publishes run one after another, so a retried one never overtakes the next. */
  #publishing: Promise<unknown> = Promise.resolve();
  #reconnectTimer: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * Opens the listening connection (the publishing one opens on the first publish).
   * @throws Error when the database cannot be reached (the message has no password).
   */
  static async open(options: PostgresBusOptions): Promise<PostgresBus> {
    const bus = new PostgresBus(options);
    try {
      await bus.#serially(() => bus.#connect());
    } catch (error) {
      await bus.close();
      throw new Error(`The cluster bus cannot listen on PostgreSQL at ${redact(options.url)}: ${(error as Error).message}`, { cause: error });
    }
    bus.#startPing();
    return bus;
  }

  private constructor(options: PostgresBusOptions) {
    this.#options = options;
    this.processId = options.processId ?? newId();
    this.#listeners = new TopicListeners(options.logger);
    const timeoutMs = options.timeoutMs ?? 5_000;
    this.#pool = new pg.Pool({
      connectionString: options.url,
      max: 1,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      idleTimeoutMillis: 30_000,
      application_name: applicationName('notify', this.processId),
    });
    // An idle connection that fails is dropped by the pool; without a listener Node would end the process.
    this.#pool.on('error', (error) => options.logger?.warn({ err: { message: error.message } }, 'cluster bus: an idle PostgreSQL connection failed'));
  }

  publish(topic: ClusterTopic, message: ClusterMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('The cluster bus is closed.'));
    let payload: string;
    try {
      payload = encodeEnvelope(topic, message, this.processId);
    } catch (error) {
      return Promise.reject(error);
    }
    const sent = this.#publishing.then(() => this.#notify(POSTGRES_CHANNEL_PREFIX + topic, payload));
    this.#publishing = sent.catch(() => {});
    return sent;
  }

  async subscribe(topic: ClusterTopic, listener: (message: ClusterMessage, from: string) => void): Promise<() => Promise<void>> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    if (this.#listeners.add(topic, listener)) await this.#serially(() => this.#onListener(topic, 'LISTEN'));
    return async () => {
      if (this.#listeners.remove(topic, listener) && !this.#closed) await this.#serially(() => this.#onListener(topic, 'UNLISTEN'));
    };
  }

  onReconnect(listener: () => void): () => void {
    return this.#listeners.onReconnect(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    clearInterval(this.#pingTimer);
    // What was published before close() still leaves.
    await this.#publishing;
    this.#listeners.clear();
    await this.#serially(async () => {
      const client = this.#listener;
      this.#listener = undefined;
      await client?.end().catch(() => {});
    });
    await this.#pool.end();
  }

  async #notify(channel: string, payload: string): Promise<void> {
    try {
      await this.#pool.query('select pg_notify($1, $2)', [channel, payload]);
    } catch (error) {
      // Once more on a fresh connection: the pooled one may have been cut (a restart, a failover).
      if (this.#closed) throw error;
      await this.#pool.query('select pg_notify($1, $2)', [channel, payload]);
    }
  }

  #serially<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#serial.then(step, step);
    this.#serial = next.catch(() => {});
    return next;
  }

  async #connect(): Promise<void> {
    const timeoutMs = this.#options.timeoutMs ?? 5_000;
    const client = new pg.Client({
      connectionString: this.#options.url,
      keepAlive: true,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
      application_name: applicationName('listen', this.processId),
    });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client));
    client.on('notification', ({ channel, payload }) => this.#receive(channel, payload));
    try {
      await client.connect();
      for (const topic of this.#listeners.topics()) await client.query(`LISTEN ${POSTGRES_CHANNEL_PREFIX}${topic}`);
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    this.#listener = client;
  }

  async #onListener(topic: ClusterTopic, command: 'LISTEN' | 'UNLISTEN'): Promise<void> {
    const client = this.#listener;
    // No connection now: the next one listens to every topic that has listeners then.
    if (client === undefined || this.#listeners.has(topic) !== (command === 'LISTEN')) return;
    try {
      // The topic passed checkTopic (lower-case letters, digits, _): safe as an unquoted identifier.
      await client.query(`${command} ${POSTGRES_CHANNEL_PREFIX}${topic}`);
    } catch (error) {
      this.#lost(client, error as Error);
    }
  }

  #receive(channel: string, payload: string | undefined): void {
    if (!channel.startsWith(POSTGRES_CHANNEL_PREFIX) || payload === undefined) return;
    const envelope = decodeEnvelope(payload);
    if (envelope === undefined) {
      this.#options.logger?.warn({ channel }, 'cluster bus: ignored a notification that is not a Palaver message');
      return;
    }
    this.#listeners.deliver(channel.slice(POSTGRES_CHANNEL_PREFIX.length), envelope.message, envelope.from);
  }

  /** The listening connection failed or ended: drop it and open another, backing off while that fails. */
  #lost(client: pg.Client, error?: Error): void {
    if (this.#closed || client !== this.#listener) return;
    this.#listener = undefined;
    client.removeAllListeners('notification');
    client.end().catch(() => {});
    this.#options.logger?.warn(
      { err: error === undefined ? undefined : { message: error.message } },
      'cluster bus: the PostgreSQL listening connection was lost; reconnecting',
    );
    this.#reconnect(0);
  }

  #reconnect(attempt: number): void {
    const min = this.#options.minBackoffMs ?? 100;
    const delay = Math.min(this.#options.maxBackoffMs ?? 5_000, min * 2 ** attempt);
    this.#reconnectTimer = setTimeout(() => {
      if (this.#closed) return;
      this.#serially(() => this.#connect()).then(
        () => {
          if (this.#closed) return;
          this.#options.logger?.info({ attempts: attempt + 1 }, 'cluster bus: listening on PostgreSQL again');
          this.#listeners.reconnected();
        },
        (error: unknown) => {
          if (this.#closed) return;
          this.#options.logger?.debug({ err: { message: (error as Error).message }, attempt }, 'cluster bus: reconnecting to PostgreSQL failed');
          this.#reconnect(attempt + 1);
        },
      );
    }, delay);
    this.#reconnectTimer.unref();
  }

  #startPing(): void {
    const intervalMs = this.#options.pingIntervalMs ?? 10_000;
    if (intervalMs <= 0) return;
    this.#pingTimer = setInterval(() => {
      const client = this.#listener;
      if (client === undefined) return;
      void this.#serially(() => client.query('select 1')).catch((error: unknown) => this.#lost(client, error as Error));
    }, intervalMs);
    this.#pingTimer.unref();
  }
}

/** Shown in `pg_stat_activity`, so an operator sees which connections are the bus's (at most 63 bytes). */
function applicationName(role: 'listen' | 'notify', processId: string): string {
  return `palaver-bus-${role}:${processId}`.slice(0, 63);
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}
