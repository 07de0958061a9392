// A stand-in for the runtime side in the tool-worker tests: publishes tool calls to the stream as wire.ts describes
// and reads what workers answer, against the machine's Redis under a key prefix of its own.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { connectRedis, type RedisConnection } from '../../src/platform/redis-connection.js';
import { parseEntry, toolCallCompleted, type ToolCallCompleted, type ToolCallRequested } from '../../src/queue/wire.js';
import { PALAVER_BIN, REPO_ROOT, cleanEnv, spawnNode, type RunningChild } from '../cli/child-process.js';

export const REDIS_URL = 'redis://127.0.0.1:6379';
export const STREAM = 'events.plugins';
export const GROUP = 'plugins-workers';
export const RESPONSES = 'rpc.plugins.responses:test-runtime';
const WORKER_TOOLS = new URL('./worker-tools.ts', import.meta.url).pathname;

export interface StreamClient {
  readonly redis: RedisConnection;
  readonly prefix: string;
  /** Publishes a call (an entry of its own each time); returns it. */
  publish(call: Partial<ToolCallRequested> & Pick<ToolCallRequested, 'toolName' | 'arguments'>): Promise<ToolCallRequested>;
  /** Publishes exactly this call again: a repeat delivery. */
  republish(call: ToolCallRequested): Promise<void>;
  cancel(call: Pick<ToolCallRequested, 'correlationId' | 'toolCallId'>): Promise<void>;
  /** Every completion on the response stream for `call`, in order. */
  results(call: ToolCallRequested): Promise<ToolCallCompleted[]>;
  /** Waits (up to `timeoutMs`) for the first completion of `call`. */
  result(call: ToolCallRequested, timeoutMs?: number): Promise<ToolCallCompleted>;
  /** Dead-letter entries. */
  deadLetters(): Promise<Record<string, string>[]>;
  close(): Promise<void>;
}

/**
 * Connects with a fresh key prefix. Rejects (and so fails the test) when Redis is unreachable: these tests are
 * about Redis and never skip.
 */
export async function connectStreamClient(): Promise<StreamClient> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const redis = await connectRedis({ url: REDIS_URL, keyPrefix: prefix });
  let counter = 0;
  const readAll = async (key: string) =>
    ((await redis.client.xRange(redis.key(key), '-', '+')) ?? []).map((entry) => (entry?.message ?? {}) as Record<string, string>);
  const client: StreamClient = {
    redis,
    prefix,
    async publish(call) {
      counter += 1;
      const toolCallId = call.toolCallId ?? `call-${counter}`;
      const turn = call.turn ?? `turn-${counter}`;
      const request: ToolCallRequested = {
        eventType: 'PluginToolCallRequested',
        correlationId: `corr-${counter}`,
        sessionId: 'session-1',
        turn,
        toolCallId,
        idempotencyKey: `${turn}:${toolCallId}`,
        userId: 'alice',
        accounts: [{ channel: 'test', accountId: 'alice' }],
        conversationId: 'conversation-1',
        role: null,
        flowState: {},
        responseChannel: RESPONSES,
        attempt: 1,
        deadline: Date.now() + 60_000,
        ...call,
      };
      await client.republish(request);
      return request;
    },
    async republish(call) {
      await redis.client.xAdd(redis.key(STREAM), '*', { data: JSON.stringify(call) });
    },
    async cancel(call) {
      await redis.client.xAdd(redis.key(STREAM), '*', {
        data: JSON.stringify({ eventType: 'PluginToolCallCancelled', correlationId: call.correlationId, toolCallId: call.toolCallId }),
      });
    },
    async results(call) {
      return (await readAll(RESPONSES))
        .map((message) => parseEntry(toolCallCompleted, message.data))
        .filter(
          (result): result is ToolCallCompleted => result !== undefined && result.correlationId === call.correlationId && result.toolCallId === call.toolCallId,
        );
    },
    async result(call, timeoutMs = 20_000) {
      await expect.poll(async () => (await client.results(call)).length, { timeout: timeoutMs, interval: 50 }).toBeGreaterThan(0);
      return (await client.results(call))[0]!;
    },
    deadLetters: () => readAll(`${STREAM}.dead`),
    async close() {
      // Leaves nothing behind on the shared server.
      for await (const keys of redis.client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) if (keys.length > 0) await redis.client.del(keys);
      await redis.close();
    },
  };
  return client;
}

/** A config file for `palaver worker` with the test tools (or those of `toolsModule`), under the client's prefix; returns its path. */
export function writeWorkerConfig(
  prefix: string,
  extra: { tools?: Record<string, unknown>; mcp?: Record<string, unknown>; toolsModule?: string } = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-worker-'));
  const file = join(dir, 'palaver.config.json');
  writeFileSync(
    file,
    JSON.stringify({
      model: { name: 'test-model' },
      agent: { toolsModule: extra.toolsModule ?? WORKER_TOOLS },
      log: { level: 'info' },
      tools: { dispatch: 'streams', stream: STREAM, group: GROUP, maxAttempts: 3, reclaimIdleMs: 1_000, ...extra.tools },
      redis: { url: REDIS_URL, keyPrefix: prefix },
      ...(extra.mcp ? { mcp: extra.mcp } : {}),
    }),
  );
  return file;
}

/** Spawns `palaver worker -c <config>` (the built bin/palaver.js) and waits until it reads; resolves with its id and process. */
export async function startWorker(configFile: string, args: readonly string[] = []): Promise<{ child: RunningChild; workerId: string }> {
  const child = spawnNode(PALAVER_BIN, ['worker', '-c', configFile, ...args], { cwd: REPO_ROOT, env: cleanEnv() });
  const match = await child.waitForOutput(/^Palaver worker (\S+) is running/m, 30_000);
  return { child, workerId: match[1]! };
}

/** A fresh file for a test tool's records. */
export function effectsFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'palaver-effects-')), 'effects.log');
}
