import { afterEach, describe, expect, it } from 'vitest';
import type { RedisConnection, RedisSettings } from '../../src/platform/redis-connection.js';
import { WorkerToolCatalogue } from '../../src/queue/worker-tool-catalogue.js';
import type { ToolCatalogue } from '../../src/queue/wire.js';
import { connectTestRedis, dropTestKeys, testRedisSettings } from '../support/redis.js';

let redis: RedisConnection | undefined;
let settings: RedisSettings | undefined;
afterEach(async () => {
  await redis?.close();
  if (settings) await dropTestKeys(settings);
  redis = settings = undefined;
});

const tool = (name: string, description = `does ${name}`) => ({ name, description, inputSchema: { type: 'object', properties: {} } });

describe('WorkerToolCatalogue', () => {
  it('offers what live workers serve, first worker by id for a shared name, and drops a worker whose key expired', async () => {
    settings = testRedisSettings();
    redis = await connectTestRedis(settings);
    const write = (catalogue: ToolCatalogue, ttlMs: number) =>
      redis!.client.set(redis!.key(`tools.catalogue:${catalogue.workerId}`), JSON.stringify(catalogue), { expiration: { type: 'PX', value: ttlMs } });
    await write({ workerId: 'b-worker', at: Date.now(), tools: [tool('track', 'from b'), tool('quote')] }, 60_000);
    await write({ workerId: 'a-worker', at: Date.now(), tools: [tool('track', 'from a')] }, 400);
    // Anything else under the pattern is not a catalogue and is ignored.
    await redis.client.set(redis.key('tools.catalogue:intruder'), '{"workerId":"intruder","tools":"all of them"}');
    // Another Palaver's workers (another prefix) are not offered.
    await redis.client.set(`other-${settings.keyPrefix}tools.catalogue:x`, JSON.stringify({ workerId: 'x', at: 1, tools: [tool('steal')] }), {
      expiration: { type: 'PX', value: 5_000 },
    });

    const catalogue = new WorkerToolCatalogue(redis, { refreshMs: 0 });
    const first = await catalogue.list();
    expect(first.map((descriptor) => [descriptor.name, descriptor.description, descriptor.source])).toEqual([
      ['quote', 'does quote', 'worker:b-worker'],
      ['track', 'from a', 'worker:a-worker'],
    ]);
    expect(first[0]!.parameters).toEqual({ type: 'object', properties: {} });
    // Unchanged offer, same array: the registry keeps the tool sets it built.
    expect(await catalogue.list()).toBe(first);

    await expect.poll(async () => (await catalogue.list()).map((descriptor) => descriptor.description), { timeout: 10_000 }).toEqual(['does quote', 'from b']);
    await redis.client.del(redis.key('tools.catalogue:b-worker'));
    expect(await catalogue.list()).toEqual([]);
  });
});
