import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { connectRedis, type RedisConnection, type RedisSettings } from '../../src/platform/redis-connection.js';

/** The server the Redis suites use; override with PALAVER_TEST_REDIS_URL. */
export const TEST_REDIS_URL = process.env.PALAVER_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Settings with a key prefix of their own, so test runs (and tests) sharing one Redis never meet. */
export function testRedisSettings(url = TEST_REDIS_URL): RedisSettings {
  return { url, keyPrefix: `palaver-test:${randomBytes(6).toString('hex')}:` };
}

/**
 * Connects to the test Redis. Fails — never skips — when it is unreachable, with the command that starts it, so a
 * missing Redis shows up as a red suite.
 */
export async function connectTestRedis(settings: RedisSettings): Promise<RedisConnection> {
  try {
    return await connectRedis(settings, { name: 'test' });
  } catch (error) {
    throw new Error(`Redis not reachable (${(error as Error).message}). Start it (node scripts/prepare-test-env.mjs) or set PALAVER_TEST_REDIS_URL.`, {
      cause: error,
    });
  }
}

/** Deletes every key under the settings' prefix. */
export async function dropTestKeys(settings: RedisSettings): Promise<void> {
  const redis = await connectTestRedis(settings);
  try {
    for await (const keys of redis.client.scanIterator({ MATCH: `${settings.keyPrefix}*`, COUNT: 500 })) {
      if (keys.length > 0) await redis.client.del(keys);
    }
  } finally {
    await redis.close();
  }
}

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A `redis-server` of the test's own, keeping nothing on disk (as this project's Redis): a restart empties it. */
export interface OwnRedisServer {
  readonly url: string;
  /** SIGKILLs the server and waits for it to be gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
}

export async function startOwnRedisServer(): Promise<OwnRedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}`;
  const server: OwnRedisServer = {
    url,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      const deadline = Date.now() + 15_000;
      for (;;) {
        try {
          const probe = await connectRedis({ url, keyPrefix: '' });
          await probe.close();
          return;
        } catch (error) {
          if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`, { cause: error });
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    },
    async kill() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      const gone = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await gone;
    },
  };
  await server.start();
  return server;
}
