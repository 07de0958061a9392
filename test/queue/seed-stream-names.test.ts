import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRedis } from '../../src/platform/redis-connection.js';
import { parseEntry, toolCallCompleted } from '../../src/queue/wire.js';
import type { ModelScript } from '../../src/testing/index.js';
import { killAll } from '../cli/child-process.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { startOwnRedisServer, type OwnRedisServer } from '../support/redis.js';
import { effectsFile, startWorker } from './stream-client.js';

// Seed 002 on the wire: with the default settings (no `redis.keyPrefix`, no `tools.stream`) tool calls travel on the
// streams the seed names, `events.plugins` and `rpc.plugins.responses:<id>`. Unprefixed names would meet other tests
// on the shared Redis, so this test runs a redis-server of its own.

const WORKER_TOOLS = new URL('./worker-tools.ts', import.meta.url).pathname;

let harness: Harness | undefined;
let redisServer: OwnRedisServer | undefined;
afterEach(async () => {
  await harness?.close();
  await killAll();
  await redisServer?.kill();
  harness = redisServer = undefined;
});

describe('tool calls over Redis with the default settings', { timeout: 60_000 }, () => {
  it('go out on events.plugins to the plugins-workers group and come back on rpc.plugins.responses:<id>', async () => {
    redisServer = await startOwnRedisServer();
    const file = effectsFile();
    const model: ModelScript = (call) => {
      const last = call.messages[call.messages.length - 1];
      if (last?.type === 'tool_result') return { text: `Done: ${last.output}` };
      if (/book/.test(lastUserText(call) ?? '') && call.toolNames.includes('book'))
        return { toolCalls: [{ name: 'book', arguments: { file, what: 'a table for two' }, callId: 'call_seed' }] };
      return { text: 'no tools' };
    };
    // Runtime and worker name only the server: stream, group and prefix are the defaults.
    const workerConfig = join(mkdtempSync(join(tmpdir(), 'palaver-worker-')), 'palaver.config.json');
    writeFileSync(
      workerConfig,
      JSON.stringify({ model: { name: 'test-model' }, agent: { toolsModule: WORKER_TOOLS }, tools: { dispatch: 'streams' }, redis: { url: redisServer.url } }),
    );
    const { workerId } = await startWorker(workerConfig);
    harness = await createHarness(model);
    const palaver = await harness.start({ tools: { dispatch: 'streams', callTimeoutMs: 15_000 }, redis: { url: redisServer.url } });

    const reply = await palaver.chat({ userId: 'li', text: 'book a table please' });
    expect(reply.text).toMatch(/^Done: Booked a table for two for /);

    const redis = await connectRedis({ url: redisServer.url, keyPrefix: '' });
    try {
      const keys = await redis.client.keys('*');
      expect(keys).toContain('events.plugins');
      expect(await redis.client.type('events.plugins')).toBe('stream');
      expect((await redis.client.xInfoGroups('events.plugins')).map((group) => group.name)).toEqual(['plugins-workers']);
      const responses = keys.filter((key) => key.startsWith('rpc.plugins.responses:'));
      expect(responses).toHaveLength(1);
      expect(await redis.client.type(responses[0]!)).toBe('stream');
      expect(keys).toContain(`tools.catalogue:${workerId}`);
      // The result the worker sent is kept under the call's ids, as the seed's idempotency key (correlationId + toolCallId).
      const kept = parseEntry(toolCallCompleted, (await redis.client.get(`tools.result:${reply.correlationId}:call_seed`)) ?? undefined);
      expect(kept).toMatchObject({ eventType: 'PluginToolCallCompleted', correlationId: reply.correlationId, toolCallId: 'call_seed', isError: false });
      // Nothing is named with a prefix.
      expect(keys.filter((key) => key.startsWith('palaver'))).toEqual([]);
    } finally {
      await redis.close();
    }
  });
});
