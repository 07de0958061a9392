import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RedisSettings } from '../../src/platform/redis-connection.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';
import type { ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';
import { killAll } from '../cli/child-process.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { dropTestKeys, testRedisSettings } from '../support/redis.js';
import { readSqliteFile } from '../support/sqlite-file.js';
import { startStandInWorker, type StandInWorker } from '../support/stand-in-tool-worker.js';
import { connectStreamClient, startWorker, writeWorkerConfig, type StreamClient } from './stream-client.js';

// A worker's result of 20,000,000 characters, on the machine's Redis: the runtime cuts whatever a worker sends to
// `tools.maxResultChars`, and a `palaver worker` cuts its results before they go on Redis.

let harness: Harness | undefined;
let worker: StandInWorker | undefined;
let redis: RedisSettings | undefined;
let client: StreamClient | undefined;
afterEach(async () => {
  await harness?.close();
  await worker?.close();
  await killAll();
  await client?.close();
  if (redis) await dropTestKeys(redis);
  harness = worker = redis = client = undefined;
});

const HUGE = 20_000_000;

describe('a worker result over tools.maxResultChars', { timeout: 60_000 }, () => {
  it('reaches the model and the store cut to the runtime’s cap, even from a worker that does not cut it', async () => {
    redis = testRedisSettings();
    // A stand-in worker runs the tool in this process and sends the whole 20,000,000 characters back.
    const dump = defineTool({ name: 'dump', description: 'Returns a very long text', input: z.object({}), run: () => 'z'.repeat(HUGE) });
    worker = await startStandInWorker({ redis, registry: new ToolRegistry([new LocalToolHost([dump])]) });
    const model: ModelScript = (call) => {
      const last = call.messages.at(-1);
      return last?.type === 'tool_result' ? { text: `Got ${last.output.length} characters.` } : { toolCalls: [{ name: 'dump', arguments: {} }] };
    };
    harness = await createHarness(model);
    const palaver = await harness.start({ tools: { dispatch: 'streams', callTimeoutMs: 20_000, maxResultChars: 5_000 }, redis });

    const reply = await palaver.chat({ userId: 'olga', text: 'dump it' });
    const expected = `${'z'.repeat(5_000)}\n…[truncated ${HUGE - 5_000} chars]`;
    expect(reply.text).toBe(`Got ${expected.length} characters.`);
    const output = harness.model.calls[1]!.messages.flatMap((item) => (item.type === 'tool_result' ? [item.output] : []));
    expect(output).toEqual([expected]);
    const stored = readSqliteFile(harness.databaseUrl, (db) => ({
      messages: Number(db.get<{ n: number }>('SELECT max(length(content)) AS n FROM messages')?.n),
      toolCalls: Number(db.get<{ n: number }>('SELECT max(length(result)) AS n FROM tool_calls')?.n),
    }));
    expect(stored.messages).toBe(expected.length);
    expect(stored.toolCalls).toBeLessThan(expected.length + 1_000);
  });

  it('is cut by a palaver worker before it goes on Redis, with the notice', async () => {
    client = await connectStreamClient();
    await startWorker(writeWorkerConfig(client.prefix, { tools: { maxResultChars: 1_000 } }));
    const call = await client.publish({ toolName: 'repeat', arguments: { char: 'y', times: HUGE } });

    const result = await client.result(call);
    expect(result).toMatchObject({ content: `${'y'.repeat(1_000)}\n…[truncated ${HUGE - 1_000} chars]`, isError: false });
    // The result the worker keeps to answer a repeat delivery is the cut one too.
    const kept = await client.redis.client.get(client.redis.key(`tools.result:${call.correlationId}:${call.toolCallId}`));
    expect(kept?.length).toBeLessThan(2_000);
  });
});
