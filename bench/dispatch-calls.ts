/**
 * Round trip of a tool call through Redis Streams: this process publishes `ToolCallRequested` entries (wire.ts) to
 * the stream, the worker processes bench/run.ts started run them (`echo`), and their `ToolCallCompleted` comes back
 * on this process's response stream, read by one blocking XREAD. Each operation is one call, from XADD to its
 * result read and parsed. Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { randomBytes } from 'node:crypto';
import { connectRedis } from '../src/queue/redis-connection.js';
import { parseEntry, toolCallCompleted, type ToolCallCompleted, type ToolCallRequested } from '../src/queue/wire.js';
import { profiled, report, runWorkers, scenarioArgs, scenarioResult } from './stats.js';

export interface DispatchCallsArgs {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly workers: number;
  readonly concurrency: number;
  readonly calls: number;
  readonly warmupCalls: number;
  readonly profileDir?: string;
}

const args = scenarioArgs<DispatchCallsArgs>();
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
    const reply = (await reader.xRead({ key: redis.key(responseChannel), id: lastId }, { BLOCK: 1_000, COUNT: 1_000 })) as { messages: { id: string; message: Record<string, string> }[] }[] | null;
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
const run = await profiled(args.profileDir, `dispatch-w${args.workers}-c${args.concurrency}-${process.pid}`, () => runWorkers(args.concurrency, args.calls, call));
stopped = true;
await reading;
await redis.close();
report(scenarioResult(`workers=${args.workers}`, args.concurrency, run, { failed }));
