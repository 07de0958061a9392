/**
 * Round trip of a tool call through Redis Streams, to the worker processes bench/run.ts started (`echo`), two ways:
 * - `wire`: this process publishes `ToolCallRequested` entries (wire.ts) with XADD and reads the `ToolCallCompleted`
 *   from its own response stream with one blocking XREAD (the transport and the worker alone);
 * - `runtime`: the runtime's path, `StreamsToolDispatcher.dispatch` on a SQLite store (WAL, in a temp folder): the
 *   call's record and outbox entry in one commit, the relay's XADD, the result routed back, the entry removed in a
 *   batch.
 * Each operation is one call. Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/observability/logger.js';
import { connectRedis } from '../src/platform/redis-connection.js';
import { StreamsToolDispatcher } from '../src/queue/streams-dispatcher.js';
import { KyselyStore, migrateToLatest, openSqliteDatabase } from '../src/store/index.js';
import { parseEntry, toolCallCompleted, type ToolCallCompleted, type ToolCallRequested } from '../src/queue/wire.js';
import { profiled, report, runWorkers, scenarioArgs, scenarioResult } from './stats.js';

export interface DispatchCallsArgs {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly workers: number;
  readonly concurrency: number;
  readonly calls: number;
  readonly warmupCalls: number;
  readonly via?: 'wire' | 'runtime';
  readonly profileDir?: string;
}

const args = scenarioArgs<DispatchCallsArgs>();
const via = args.via ?? 'wire';
if (via === 'runtime') await runtimePath();
const redis = await connectRedis({ url: args.redisUrl, keyPrefix: args.keyPrefix });
const responseChannel = `rpc.plugins.responses:bench-${randomBytes(4).toString('hex')}`;
const stream = redis.key('events.plugins');
const waiting = new Map<string, (result: ToolCallCompleted) => void>();

// One reader for every answer, as the runtime's dispatcher has.
const reader = await redis.blockingClient('responses');
let stopped = false;
const reading = (async () => {
  let lastId = '0-0'; // the stream is this process's own and new
  while (!stopped) {
    const reply = (await reader.xRead({ key: redis.key(responseChannel), id: lastId }, { BLOCK: 1_000, COUNT: 1_000 })) as
      | { messages: { id: string; message: Record<string, string> }[] }[]
      | null;
    for (const { id, message } of reply?.[0]?.messages ?? []) {
      lastId = id;
      const result = parseEntry(toolCallCompleted, message.data);
      if (result) waiting.get(result.toolCallId)?.(result);
    }
  }
})();

let failed = 0;
const call = async (worker: number, index: number): Promise<void> => {
  const toolCallId = `${worker}-${index}-${randomBytes(3).toString('hex')}`;
  const request: ToolCallRequested = {
    eventType: 'PluginToolCallRequested',
    correlationId: `bench-${toolCallId}`,
    sessionId: `session-${worker}`,
    turn: `turn-${worker}-${index}`,
    toolCallId,
    idempotencyKey: `turn-${worker}-${index}:${toolCallId}`,
    toolName: 'echo',
    arguments: { text: 'hello' },
    userId: `user-${worker}`,
    accounts: [{ channel: 'bench', accountId: `user-${worker}` }],
    conversationId: `user-${worker}`,
    role: null,
    flowState: {},
    responseChannel,
    attempt: 1,
    deadline: Date.now() + 60_000,
  };
  const answered = new Promise<ToolCallCompleted>((resolve) => waiting.set(toolCallId, resolve));
  await redis.client.xAdd(stream, '*', { data: JSON.stringify(request) });
  const result = await answered;
  waiting.delete(toolCallId);
  if (result.isError || result.content !== 'hello') {
    failed += 1;
    if (failed <= 3) console.error(`dispatch: unexpected result ${JSON.stringify(result)}`);
  }
};

if (args.warmupCalls > 0) await runWorkers(Math.min(args.concurrency, args.warmupCalls), args.warmupCalls, call);
const run = await profiled(args.profileDir, `dispatch-w${args.workers}-c${args.concurrency}-${process.pid}`, () =>
  runWorkers(args.concurrency, args.calls, call),
);
stopped = true;
await reading;
await redis.close();
report(scenarioResult(`workers=${args.workers}`, args.concurrency, run, { failed, via }));

/** The runtime's path: StreamsToolDispatcher on a SQLite store. Reports and exits. */
async function runtimePath(): Promise<never> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-dispatch-'));
  const db = openSqliteDatabase(`sqlite:${join(dir, 'palaver.db')}`);
  await migrateToLatest(db);
  const now = Date.now();
  await db.insertInto('users').values({ id: 'user-1', display_name: null, phone: null, created_at: now }).execute();
  await db
    .insertInto('sessions')
    .values({ id: 'session-1', user_id: 'user-1', channel: 'bench', conversation_id: 'c-1', title: null, created_at: now, updated_at: now })
    .execute();
  const store = new KyselyStore(db, { dialect: 'sqlite' });
  const dispatcher = await StreamsToolDispatcher.start({
    redis: await connectRedis({ url: args.redisUrl, keyPrefix: args.keyPrefix }),
    store,
    settings: { callTimeoutMs: 15_000, maxAttempts: 3, stream: 'events.plugins', group: 'plugins-workers' },
    logger: silentLogger(),
    closeConnection: true,
  });
  let failures = 0;
  const dispatch = async (worker: number, index: number): Promise<void> => {
    const callId = `${worker}-${index}-${randomBytes(3).toString('hex')}`;
    const result = await dispatcher.dispatch({
      callId,
      idempotencyKey: `turn-${callId}:${callId}`,
      tool: 'echo',
      arguments: { text: 'hello' },
      userId: 'user-1',
      accounts: [{ channel: 'bench', accountId: 'user-1' }],
      sessionId: 'session-1',
      conversationId: 'c-1',
      correlationId: `bench-${callId}`,
      role: null,
      flowState: {},
    });
    if (result.isError || result.content !== 'hello') {
      failures += 1;
      if (failures <= 3) console.error(`dispatch: unexpected result ${JSON.stringify(result)}`);
    }
  };
  if (args.warmupCalls > 0) await runWorkers(Math.min(args.concurrency, args.warmupCalls), args.warmupCalls, dispatch);
  const measured = await profiled(args.profileDir, `dispatch-runtime-w${args.workers}-c${args.concurrency}-${process.pid}`, () =>
    runWorkers(args.concurrency, args.calls, dispatch),
  );
  await dispatcher.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  report(scenarioResult(`runtime workers=${args.workers}`, args.concurrency, measured, { failed: failures, via: 'runtime' }));
  return new Promise<never>(() => undefined);
}
