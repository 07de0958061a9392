import { createClient, type RedisClientType } from 'redis';
import type { Logger } from '../observability/logger.js';

/** A node-redis client as Palaver uses it (no modules, RESP2 replies). */
export type RedisClient = RedisClientType;

/** The config's `redis` section: the server and the prefix of every key (named here: platform sits below the config). */
export interface RedisSettings {
  readonly url: string;
  readonly keyPrefix: string;
}

/**
 * One Redis server as the runtime and the workers reach it: `client` for ordinary commands (node-redis's 5 s
 * command timeout stays on, so a stalled server turns into an error instead of a hung turn), `key()` for every key
 * and stream name, and `blockingClient()` for reads that wait (`XREAD … BLOCK`, `XREADGROUP … BLOCK`).
 */
export interface RedisConnection {
  readonly client: RedisClient;
  /** `name` under `redis.keyPrefix`, so several Palavers and test runs share one Redis without meeting. */
  key(name: string): string;
  /**
   * A new connection to the same server with no command timeout, for one blocking reader: a `BLOCK` read holds its
   * connection (every other command on it would wait behind it), and the default timeout would cut a 5 s wait.
   * Closed by `close()` with the rest.
   */
  blockingClient(name: string): Promise<RedisClient>;
  /** Closes `client` and every blocking client. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Connects to `redis.url` (`redis://`, `rediss://` for TLS, a password in the URL). Errors are logged without the
 * URL, and node-redis reconnects on its own (with backoff); commands issued meanwhile wait for the connection.
 * @throws when the first connection cannot be made (the message names host and port, never the password).
 * @example
 * const redis = await connectRedis(config.redis, { logger, name: 'runtime' });
 * await redis.client.xAdd(redis.key(config.tools.stream), '*', { data });
 */
export async function connectRedis(settings: RedisSettings, options: { readonly logger?: Logger; readonly name?: string } = {}): Promise<RedisConnection> {
  const name = options.name ?? 'palaver';
  let connectedOnce = false;
  const client = createClient({
    url: settings.url,
    socket: {
      connectTimeout: 5_000,
      // A first connection that fails is reported to the caller (a few quick tries), not retried for ever in the
      // background; once connected, a lost connection is retried for as long as it takes (a Redis restart).
      reconnectStrategy: (retries, cause) => (connectedOnce || retries < 3 ? Math.min(50 * 2 ** retries, 2_000) : cause),
    },
  }) as RedisClient;
  client.once('ready', () => (connectedOnce = true));
  const blocking: RedisClient[] = [];
  const watch = (subject: RedisClient, label: string): void => {
    // An 'error' listener is required: without one node-redis re-throws socket errors and the process ends.
    let lastReported = 0;
    subject.on('error', (error: Error) => {
      const now = Date.now();
      if (now - lastReported < 5_000) return;
      lastReported = now;
      options.logger?.warn({ redis: label, err: { message: error.message } }, 'Redis connection error; reconnecting');
    });
  };
  watch(client, name);
  await connectOrExplain(client, settings.url);
  let closed = false;
  return {
    client,
    key: (key) => `${settings.keyPrefix}${key}`,
    async blockingClient(label) {
      if (closed) throw new Error('Redis connection closed');
      const duplicate = client.duplicate({ commandOptions: { timeout: 0 } }) as RedisClient;
      watch(duplicate, `${name}:${label}`);
      blocking.push(duplicate);
      await connectOrExplain(duplicate, settings.url);
      return duplicate;
    },
    async close() {
      if (closed) return;
      closed = true;
      // destroy(): a blocking read in flight ends at once instead of waiting out its BLOCK time.
      for (const subject of [...blocking, client]) {
        if (subject.isOpen) subject.destroy();
      }
    },
  };
}

/** Connects once; on failure closes the client (stops its reconnect loop) and throws a message without the URL. */
async function connectOrExplain(client: RedisClient, url: string): Promise<void> {
  try {
    await client.connect();
  } catch (error) {
    if (client.isOpen) client.destroy();
    throw new Error(`Cannot connect to Redis at ${describeRedisUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
}

/** `redis://host:port/db` without user and password, for messages. */
export function describeRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}
