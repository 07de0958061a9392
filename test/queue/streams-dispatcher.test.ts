import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Store } from '../../src/domain/ports/store.js';
import type { ToolCallRequest } from '../../src/domain/ports/tool-dispatch.js';
import { silentLogger } from '../../src/observability/logger.js';
import { PalaverMetrics } from '../../src/observability/metrics.js';
import { ToolDispatchMetrics } from '../../src/observability/tool-dispatch-metrics.js';
import { connectRedis, type RedisSettings } from '../../src/platform/redis-connection.js';
import { StreamsToolDispatcher, type StreamsDispatchSettings } from '../../src/queue/streams-dispatcher.js';
import { parseEntry, streamEvent } from '../../src/queue/wire.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';
import { KyselyStore, migrateToLatest, openSqliteDatabase } from '../../src/store/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';
import { toolDispatcherContract } from '../contracts/tool-dispatch-contract.js';
import { connectTestRedis, dropTestKeys, freePort, startOwnRedisServer, testRedisSettings } from '../support/redis.js';
import { startStandInWorker, type StandInWorker } from '../support/stand-in-tool-worker.js';

let dir: string;
let files = 0;
/** Everything a test started, closed after it (or after the file, for the contract's dispatchers). */
const toClose: (() => Promise<unknown>)[] = [];
const prefixes: RedisSettings[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-streams-'));
});

afterAll(async () => {
  await closeAll();
  await Promise.all(prefixes.map((settings) => dropTestKeys(settings)));
  await rm(dir, { recursive: true, force: true });
});

async function closeAll(): Promise<void> {
  for (const close of toClose.splice(0).reverse()) await close().catch(() => undefined);
}

/** A migrated SQLite store holding the user and session the contract's requests name. */
async function storeFor(userId = 'user-7', sessionId = 'session-7'): Promise<Store> {
  const db = openSqliteDatabase(`sqlite:${join(dir, `store-${(files += 1)}.db`)}`);
  await migrateToLatest(db);
  const now = Date.now();
  await db.insertInto('users').values({ id: userId, display_name: null, phone: null, created_at: now }).execute();
  await db
    .insertInto('sessions')
    .values({ id: sessionId, user_id: userId, channel: 'web', conversation_id: 'thread-7', title: null, created_at: now, updated_at: now })
    .execute();
  const store = new KyselyStore(db, { dialect: 'sqlite' });
  toClose.push(() => store.close());
  return store;
}

const settings = (overrides: Partial<StreamsDispatchSettings> = {}): StreamsDispatchSettings => ({
  callTimeoutMs: 15_000,
  maxAttempts: 3,
  stream: 'events.plugins',
  group: 'plugins-workers',
  ...overrides,
});

function ownSettings(url?: string): RedisSettings {
  const redis = testRedisSettings(url);
  prefixes.push(redis);
  return redis;
}

async function startDispatcher(
  redis: RedisSettings,
  store: Store,
  overrides: Partial<StreamsDispatchSettings> = {},
  metrics?: ToolDispatchMetrics,
  sweepMs?: number,
) {
  const connection = await connectRedis(redis);
  const dispatcher = await StreamsToolDispatcher.start({
    redis: connection,
    store,
    settings: settings(overrides),
    logger: silentLogger(),
    closeConnection: true,
    ...(metrics ? { metrics } : {}),
    ...(sweepMs ? { sweepMs } : {}),
  });
  toClose.push(() => dispatcher.close());
  return dispatcher;
}

async function startWorker(options: Parameters<typeof startStandInWorker>[0]): Promise<StandInWorker> {
  const worker = await startStandInWorker(options);
  toClose.push(() => worker.close());
  return worker;
}

const request = (overrides: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
  callId: 'call-1',
  idempotencyKey: 'turn-1:call-1',
  tool: 'echo',
  arguments: { text: 'hi' },
  userId: 'user-7',
  accounts: [{ channel: 'web', accountId: 'visitor-7' }],
  sessionId: 'session-7',
  conversationId: 'thread-7',
  correlationId: 'corr-7',
  role: null,
  flowState: {},
  ...overrides,
});

const echo = defineTool({ name: 'echo', description: 'Echoes', input: z.object({ text: z.string() }), run: ({ text }) => `echo: ${text}` });
const registryOf = (...tools: Parameters<typeof defineTool>[0][]) =>
  new ToolRegistry([new LocalToolHost(tools.length > 0 ? tools.map((tool) => defineTool(tool)) : [echo])]);

// The port's contract, with a stand-in worker (test/support/stand-in-tool-worker.ts) on the machine's Redis, under
// a key prefix of its own per dispatcher.
toolDispatcherContract('Redis Streams', async (registry) => {
  const redis = ownSettings();
  await startWorker({ redis, registry });
  return startDispatcher(redis, await storeFor());
});

describe('StreamsToolDispatcher', () => {
  afterEach(closeAll);

  it('fails, never skips, when Redis is unreachable: connecting says where, without the password', async () => {
    const port = await freePort();
    const started = Date.now();
    await expect(connectRedis({ url: `redis://:hunter2-secret@127.0.0.1:${port}`, keyPrefix: 'x:' })).rejects.toThrow(
      new RegExp(`Cannot connect to Redis at redis://127\\.0\\.0\\.1:${port}`),
    );
    await expect(connectRedis({ url: `redis://:hunter2-secret@127.0.0.1:${port}`, keyPrefix: 'x:' })).rejects.not.toThrow(/hunter2/);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The suite's own Redis must be there: this connects or fails the file.
    const redis = await connectTestRedis(ownSettings());
    expect(await redis.client.ping()).toBe('PONG');
    await redis.close();
  });

  it('round-trips a call and removes its outbox entry once the result is in; metrics count it', async () => {
    const redis = ownSettings();
    const store = await storeFor();
    const metrics = new PalaverMetrics();
    const connection = await connectTestRedis(redis);
    toClose.push(() => connection.close());
    const dispatchMetrics = new ToolDispatchMetrics(metrics.registry, {
      length: () => connection.client.xLen(connection.key('events.plugins')),
      pending: async () => (await connection.client.xPending(connection.key('events.plugins'), 'plugins-workers')).pending,
    });
    const worker = await startWorker({ redis, registry: registryOf() });
    const dispatcher = await startDispatcher(redis, store, {}, dispatchMetrics);

    const result = await dispatcher.dispatch(request());
    expect(result).toMatchObject({ callId: 'call-1', content: 'echo: hi', isError: false, effects: {} });
    expect(worker.ran).toHaveLength(1);
    expect(worker.ran[0]).toMatchObject({
      eventType: 'PluginToolCallRequested',
      correlationId: 'corr-7',
      turn: 'turn-1',
      toolCallId: 'call-1',
      toolName: 'echo',
      userId: 'user-7',
      attempt: 1,
      responseChannel: dispatcher.responseChannel,
    });
    expect(await store.toolCalls.findByCallId('turn-1:call-1')).toMatchObject({ name: 'echo', status: 'running' });
    await expect.poll(() => store.toolOutbox.list(dispatcher.responseChannel, { dueOnly: false, limit: 10 }), { timeout: 10_000 }).toEqual([]);

    const text = await metrics.registry.metrics();
    expect(text).toMatch(/palaver_tool_dispatch_calls_total\{outcome="ok"\} 1/);
    expect(text).toMatch(/palaver_tool_dispatch_round_trip_seconds_count 1/);
    expect(text).toMatch(/palaver_tool_stream_length 1/);
    // The worker acknowledges after it answers: the call leaves the pending list a moment later.
    await expect.poll(() => metrics.registry.metrics(), { timeout: 10_000 }).toMatch(/palaver_tool_stream_pending 0/);
  });

  it('costs the store one commit per call on its way out: nothing is stamped per call, answered entries go in batches', async () => {
    const redis = ownSettings();
    const store = await storeFor();
    const counted = { markPublished: 0, remove: 0, removed: 0 };
    const outbox = store.toolOutbox;
    const spied: Pick<Store, 'transaction' | 'toolOutbox'> = {
      transaction: (work) => store.transaction(work),
      toolOutbox: {
        put: (entry) => outbox.put(entry),
        markPublished: (key, attempt) => ((counted.markPublished += 1), outbox.markPublished(key, attempt)),
        remove: (...keys) => ((counted.remove += 1), (counted.removed += keys.length), outbox.remove(...keys)),
        list: (channel, options) => outbox.list(channel, options),
        removeExpired: (before) => outbox.removeExpired(before),
      },
    };
    await startWorker({ redis, registry: registryOf() });
    const dispatcher = await StreamsToolDispatcher.start({
      redis: await connectRedis(redis),
      store: spied,
      settings: settings(),
      logger: silentLogger(),
      closeConnection: true,
    });
    toClose.push(() => dispatcher.close());
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, index) =>
        dispatcher.dispatch(request({ callId: `call-${index}`, idempotencyKey: `turn-1:call-${index}`, arguments: { text: `n${index}` } })),
      ),
    );
    expect(results.map((result) => result.content)).toEqual(Array.from({ length: 40 }, (_, index) => `echo: n${index}`));
    await expect.poll(() => store.toolOutbox.list(dispatcher.responseChannel, { dueOnly: false, limit: 100 }), { timeout: 10_000 }).toEqual([]);
    expect(counted.markPublished).toBe(0);
    expect(counted.removed).toBe(40);
    expect(counted.remove).toBeLessThan(40);
  });

  it('with no worker, answers with a clear tool error after its attempts, within the timeouts, and forgets the call', async () => {
    const redis = ownSettings();
    const store = await storeFor();
    const metrics = new PalaverMetrics();
    const dispatcher = await startDispatcher(redis, store, { callTimeoutMs: 400, maxAttempts: 2 }, new ToolDispatchMetrics(metrics.registry));
    const started = Date.now();
    const result = await dispatcher.dispatch(request());
    const took = Date.now() - started;
    expect(result).toMatchObject({ callId: 'call-1', isError: true, effects: {} });
    expect(result.content).toContain('The tool echo did not answer');
    expect(result.content).toContain('2 attempts');
    expect(took).toBeGreaterThanOrEqual(800);
    expect(took).toBeLessThan(5_000);
    await expect.poll(() => store.toolOutbox.list(dispatcher.responseChannel, { dueOnly: false, limit: 10 }), { timeout: 10_000 }).toEqual([]);

    // Both attempts are on the stream, counted up.
    const connection = await connectTestRedis(redis);
    toClose.push(() => connection.close());
    const entries = await connection.client.xRange(connection.key('events.plugins'), '-', '+');
    expect((entries ?? []).map((entry) => parseEntry(streamEvent, entry?.message.data))).toMatchObject([{ attempt: 1 }, { attempt: 2 }]);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/palaver_tool_dispatch_calls_total\{outcome="timeout"\} 1/);
    expect(text).toMatch(/palaver_tool_dispatch_attempt_timeouts_total 2/);
  });

  it('publishes the call again with the next attempt when an attempt gets no answer, and takes the later answer', async () => {
    const redis = ownSettings();
    const worker = await startWorker({ redis, registry: registryOf(), answerFromAttempt: 2 });
    const dispatcher = await startDispatcher(redis, await storeFor(), { callTimeoutMs: 500, maxAttempts: 3 });
    const result = await dispatcher.dispatch(request());
    expect(result).toMatchObject({ isError: false, content: 'echo: hi' });
    expect(worker.delivered.map((call) => call.attempt)).toEqual([1, 2]);
    expect(worker.ran).toHaveLength(1);
  });

  it('shares one dispatch between concurrent dispatches of the same call, and a repeated delivery runs once', async () => {
    const redis = ownSettings();
    let runs = 0;
    const worker = await startWorker({
      redis,
      registry: registryOf({ name: 'count', description: 'Counts', input: z.object({}), run: () => `run ${(runs += 1)}` }),
    });
    const dispatcher = await startDispatcher(redis, await storeFor());
    const [a, b] = await Promise.all([
      dispatcher.dispatch(request({ tool: 'count', arguments: {} })),
      dispatcher.dispatch(request({ tool: 'count', arguments: {} })),
    ]);
    expect(a).toEqual(b);
    // The same call sent again (a retry, a turn resumed) gets the first result back from the worker.
    const again = await dispatcher.dispatch(request({ tool: 'count', arguments: {} }));
    expect(again.content).toBe('run 1');
    expect(runs).toBe(1);
    expect(worker.delivered).toHaveLength(2);
  });

  it('writes a cancel entry when the turn is aborted, answers at once, and the worker skips the call', async () => {
    const redis = ownSettings();
    const store = await storeFor();
    const metrics = new PalaverMetrics();
    const dispatcher = await startDispatcher(redis, store, { callTimeoutMs: 10_000 }, new ToolDispatchMetrics(metrics.registry));
    const turn = new AbortController();
    const pending = dispatcher.dispatch(request(), { signal: turn.signal });
    const connection = await connectTestRedis(redis);
    toClose.push(() => connection.close());
    await expect.poll(() => connection.client.xLen(connection.key('events.plugins')), { timeout: 10_000 }).toBe(1);
    const started = Date.now();
    turn.abort();
    expect(await pending).toMatchObject({ isError: true, content: 'The call to echo was cancelled.' });
    expect(Date.now() - started).toBeLessThan(2_000);
    const entries = ((await connection.client.xRange(connection.key('events.plugins'), '-', '+')) ?? []).map((entry) =>
      parseEntry(streamEvent, entry?.message.data),
    );
    expect(entries).toMatchObject([
      { eventType: 'PluginToolCallRequested', toolCallId: 'call-1' },
      { eventType: 'PluginToolCallCancelled', correlationId: 'corr-7', toolCallId: 'call-1' },
    ]);
    await expect.poll(() => store.toolOutbox.list(dispatcher.responseChannel, { dueOnly: false, limit: 10 }), { timeout: 10_000 }).toEqual([]);
    expect(await metrics.registry.metrics()).toMatch(/palaver_tool_dispatch_calls_total\{outcome="cancelled"\} 1/);

    // A worker that joins now reads both entries in order: it honours the cancel and runs nothing.
    const worker = await startWorker({ redis, registry: registryOf() });
    await expect.poll(() => worker.cancelled.length, { timeout: 10_000 }).toBe(1);
    expect(worker.ran).toEqual([]);
  });

  it('ignores malformed and unrelated entries on its response stream', async () => {
    const redis = ownSettings();
    await startWorker({ redis, registry: registryOf() });
    const dispatcher = await startDispatcher(redis, await storeFor());
    const connection = await connectTestRedis(redis);
    toClose.push(() => connection.close());
    const responses = connection.key(dispatcher.responseChannel);
    await connection.client.xAdd(responses, '*', { data: '{"eventType":"PluginToolCallCompleted","correlationId":"corr-7"}' });
    await connection.client.xAdd(responses, '*', { data: 'not json' });
    await connection.client.xAdd(responses, '*', { other: 'field' });
    expect(await dispatcher.dispatch(request())).toMatchObject({ isError: false, content: 'echo: hi' });
  });

  it('loses no call when Redis restarts empty: the unanswered call is published again and answered', async () => {
    const server = await startOwnRedisServer();
    toClose.push(() => server.kill());
    // Not in `prefixes`: the server goes with the test, keys and all.
    const redis = testRedisSettings(server.url);
    const metrics = new PalaverMetrics();
    const store = await storeFor();
    const dispatcher = await startDispatcher(redis, store, { callTimeoutMs: 30_000, maxAttempts: 1 }, new ToolDispatchMetrics(metrics.registry), 100);
    const pending = dispatcher.dispatch(request());
    // Recorded in the outbox and published, with no worker to take it yet...
    const connection = await connectTestRedis(redis);
    await expect.poll(() => connection.client.xLen(connection.key('events.plugins')), { timeout: 10_000 }).toBe(1);
    await connection.close();
    expect(await store.toolOutbox.list(dispatcher.responseChannel, { dueOnly: false, limit: 10 })).toMatchObject([{ callKey: 'turn-1:call-1', attempt: 1 }]);
    // ...when Redis dies and comes back with nothing.
    await server.kill();
    await server.start();
    const worker = await startWorker({ redis, registry: registryOf() });
    expect(await pending).toMatchObject({ isError: false, content: 'echo: hi' });
    expect(worker.ran).toHaveLength(1);
    expect(await metrics.registry.metrics()).toMatch(/palaver_tool_dispatch_republished_total 1/);
  }, 60_000);
});
