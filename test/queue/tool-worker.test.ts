import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startLogisticsMcpServer, type LogisticsMcpServer } from '../../examples/logistics/mcp-server.js';
import { checkToolStreams } from '../../src/cli/doctor-streams.js';
import { parseConfig } from '../../src/config/index.js';
import { streamBacklog } from '../../src/queue/stream-backlog.js';
import { parseEntry, toolCatalogue } from '../../src/queue/wire.js';
import { killAll } from '../cli/child-process.js';
import { connectStreamClient, effectsFile, GROUP, startWorker, STREAM, writeWorkerConfig, type StreamClient } from './stream-client.js';

// Real `palaver worker` processes against the machine's Redis (127.0.0.1:6379), each test under a key prefix of its
// own. When Redis is unreachable, connecting fails and so does every test: they never skip.

let client: StreamClient | undefined;
let mcp: LogisticsMcpServer | undefined;
afterEach(async () => {
  await killAll();
  await client?.close();
  await mcp?.close();
  client = mcp = undefined;
});

const records = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

async function catalogue(redis: StreamClient, workerId: string) {
  return parseEntry(toolCatalogue, (await redis.redis.client.get(redis.redis.key(`tools.catalogue:${workerId}`))) ?? undefined);
}

describe('palaver worker', { timeout: 60_000 }, () => {
  it('runs calls from the stream and answers on the response stream, with the effects the tool made', async () => {
    client = await connectStreamClient();
    const { workerId } = await startWorker(writeWorkerConfig(client.prefix));
    const file = effectsFile();

    // Anyone with the Redis password can write to the stream: junk is acknowledged and dropped, the worker goes on.
    await client.redis.client.xAdd(client.redis.key(STREAM), '*', { data: '{"eventType":"PluginToolCallRequested"}' });
    await client.redis.client.xAdd(client.redis.key(STREAM), '*', { other: 'field' });
    const call = await client.publish({ toolName: 'book', arguments: { file, what: 'a table for two' } });
    const unknown = await client.publish({ toolName: 'no_such_tool', arguments: {} });

    const result = await client.result(call);
    expect(result).toMatchObject({
      content: 'Booked a table for two for alice',
      isError: false,
      effects: { flowState: { booking: { what: 'a table for two' } } },
      workerId,
    });
    expect(await client.result(unknown)).toMatchObject({ isError: true, content: 'Unknown tool no_such_tool.' });
    expect(records(file)).toEqual([`start ${call.idempotencyKey}`, `effect ${call.idempotencyKey} a table for two for alice`]);
    // Every entry is acknowledged, the malformed ones included.
    await expect.poll(async () => (await client!.redis.client.xPending(client!.redis.key(STREAM), GROUP)).pending, { timeout: 10_000 }).toBe(0);

    const published = await catalogue(client, workerId);
    expect(published?.tools.map((tool) => tool.name).sort()).toEqual(['book', 'crash', 'echo', 'repeat', 'slow']);
    expect(published?.tools.find((tool) => tool.name === 'echo')?.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
  });

  it('runs a call delivered twice once, and answers the repeat with the first result', async () => {
    client = await connectStreamClient();
    await startWorker(writeWorkerConfig(client.prefix));
    const file = effectsFile();
    const call = await client.publish({ toolName: 'book', arguments: { file, what: 'one room' } });
    await client.republish(call);
    const first = await client.result(call);
    await client.republish(call);
    await expect.poll(async () => (await client!.results(call)).length, { timeout: 10_000 }).toBe(3);

    expect(await client.results(call)).toEqual([first, first, first]);
    expect(records(file).filter((line) => line.startsWith('effect'))).toHaveLength(1);
  });

  it('finishes on another worker a call whose worker was killed mid-call, and its side effect happens once', async () => {
    client = await connectStreamClient();
    const config = writeWorkerConfig(client.prefix, { tools: { reclaimIdleMs: 1_000 } });
    const workers = await Promise.all([startWorker(config), startWorker(config)]);
    const file = effectsFile();
    const call = await client.publish({ toolName: 'book', arguments: { file, what: 'a flight', holdFirst: true } });

    // The worker holding the entry is the one running the call: kill it there.
    await expect.poll(() => records(file).length, { timeout: 15_000 }).toBe(1);
    const [pending] = await client.redis.client.xPendingRange(client.redis.key(STREAM), GROUP, '-', '+', 10);
    const holder = workers.find((worker) => worker.workerId === pending!.consumer)!;
    const other = workers.find((worker) => worker !== holder)!;
    expect((await holder.child.stop('SIGKILL')).signal).toBe('SIGKILL');

    const result = await client.result(call);
    expect(result).toMatchObject({ content: 'Booked a flight for alice', isError: false, workerId: other.workerId });
    expect(records(file)).toEqual([`start ${call.idempotencyKey}`, `start ${call.idempotencyKey}`, `effect ${call.idempotencyKey} a flight for alice`]);
    expect(await client.results(call)).toHaveLength(1);
    // The dead worker's catalogue expires with its heartbeat; the live one's stays.
    expect(await catalogue(client, other.workerId)).toBeDefined();
  });

  it("keeps on the request stream only calls not finished: answered entries go, a dead worker's call stays to be taken over", async () => {
    client = await connectStreamClient();
    const streamKey = client.redis.key(STREAM);
    // What an earlier version left behind: entries its workers acknowledged and never removed.
    await client.redis.client.xGroupCreate(streamKey, GROUP, '0', { MKSTREAM: true });
    for (let index = 0; index < 20; index++) await client.publish({ toolName: 'echo', arguments: { text: `old ${index}` } });
    const old = (await client.redis.client.xReadGroup(GROUP, 'earlier-version', { key: streamKey, id: '>' }, { COUNT: 100 })) as {
      messages: { id: string }[];
    }[];
    await client.redis.client.xAck(
      streamKey,
      GROUP,
      old[0]!.messages.map((message) => message.id),
    );

    const config = writeWorkerConfig(client.prefix, { tools: { reclaimIdleMs: 1_000 } });
    const first = await startWorker(config);
    const file = effectsFile();
    const held = await client.publish({ toolName: 'book', arguments: { file, what: 'a car', holdFirst: true } });
    await expect.poll(() => records(file).length, { timeout: 15_000 }).toBe(1);
    const calls = await Promise.all(Array.from({ length: 50 }, (_, index) => client!.publish({ toolName: 'echo', arguments: { text: `call ${index}` } })));
    for (const call of calls) expect((await client.result(call)).content).toBe(call.arguments.text);

    // Left: the entry of the call still running. The 50 answered ones and the earlier version's are gone.
    await expect.poll(() => client!.redis.client.xLen(streamKey), { timeout: 10_000 }).toBe(1);
    expect(await client.redis.client.xRange(streamKey, '-', '+')).toEqual([expect.objectContaining({ message: { data: JSON.stringify(held) } })]);

    // Its worker dies; calls published meanwhile wait, and the backlog counts them with the held one.
    await first.child.stop('SIGKILL');
    const waiting = [
      await client.publish({ toolName: 'echo', arguments: { text: 'w1' } }),
      await client.publish({ toolName: 'echo', arguments: { text: 'w2' } }),
    ];
    expect(await streamBacklog(client.redis, STREAM, GROUP)).toBe(3);

    // Another worker takes the held entry over and finishes the call; then nothing is left.
    const second = await startWorker(config);
    expect(await client.result(held)).toMatchObject({ content: 'Booked a car for alice', workerId: second.workerId });
    for (const call of waiting) await client.result(call);
    await expect.poll(() => client!.redis.client.xLen(streamKey), { timeout: 10_000 }).toBe(0);
    expect(await streamBacklog(client.redis, STREAM, GROUP)).toBe(0);
  });

  it('gives up on a call no worker can finish after tools.maxAttempts: dead-letter stream, and a failed result for the model', async () => {
    client = await connectStreamClient();
    const config = writeWorkerConfig(client.prefix, { tools: { maxAttempts: 2, reclaimIdleMs: 500 } });
    // Each attempt kills the worker running it; the third worker finds the call out of attempts.
    await Promise.all([startWorker(config), startWorker(config), startWorker(config)]);
    const file = effectsFile();
    const call = await client.publish({ toolName: 'crash', arguments: { file } });

    const result = await client.result(call, 30_000);
    expect(result).toMatchObject({ isError: true, content: 'The tool crash failed: it could not be completed after 2 attempts.' });
    expect(records(file)).toEqual([`start ${call.idempotencyKey}`, `start ${call.idempotencyKey}`]);
    const dead = await client.deadLetters();
    expect(dead).toHaveLength(1);
    expect(JSON.parse(dead[0]!.data!)).toEqual(call);
    expect(dead[0]).toMatchObject({ attempts: '2' });
    expect(dead[0]!.error).toMatch(/stopped before it finished/);
    // A repeat of the dead call is answered with the same failure, and runs nothing.
    await client.republish(call);
    await expect.poll(async () => (await client!.results(call)).length, { timeout: 10_000 }).toBe(2);
    expect(records(file)).toHaveLength(2);
  });

  it('runs an MCP tool and a local tool through the same worker, and lists both in its catalogue', async () => {
    client = await connectStreamClient();
    mcp = await startLogisticsMcpServer({ token: 'worker-test-token-7d1e' });
    const { workerId } = await startWorker(
      writeWorkerConfig(client.prefix, {
        mcp: { servers: [{ label: 'logistics', url: mcp.url, bearerToken: 'worker-test-token-7d1e', userIdArgument: 'user_id' }] },
      }),
    );
    const cargo = await client.publish({ toolName: 'cargo_add', arguments: { from: 'Lyon', to: 'Turin', weight_kg: 120 } });
    const echo = await client.publish({ toolName: 'echo', arguments: { text: 'hello' } });

    expect(await client.result(cargo)).toMatchObject({ isError: false, content: expect.stringMatching(/^Cargo \S+ added: Lyon → Turin, 120 kg$/) });
    expect(await client.result(echo)).toMatchObject({ isError: false, content: 'hello' });
    // The MCP server acted for the user the runtime bound, with the call's idempotency key.
    expect(mcp.calls).toHaveLength(1);
    expect(mcp.calls[0]).toMatchObject({
      name: 'cargo_add',
      args: { user_id: 'alice' },
      meta: { correlationId: cargo.correlationId, idempotencyKey: cargo.idempotencyKey },
    });
    const names = (await catalogue(client, workerId))?.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'cargo_add', 'find_cargoes']));
  });

  it('skips a call cancelled before it started and a call past its deadline', async () => {
    client = await connectStreamClient();
    await startWorker(writeWorkerConfig(client.prefix));
    const file = effectsFile();
    const cancelled = { toolName: 'book', arguments: { file, what: 'cancelled' }, toolCallId: 'call-cancelled', correlationId: 'corr-cancelled' };
    await client.cancel(cancelled);
    await expect.poll(async () => client!.redis.client.exists(client!.redis.key('tools.cancelled:corr-cancelled:call-cancelled')), { timeout: 10_000 }).toBe(1);
    const skipped = await client.publish(cancelled);
    const late = await client.publish({ toolName: 'book', arguments: { file, what: 'late' }, deadline: Date.now() - 1 });
    const marker = await client.publish({ toolName: 'echo', arguments: { text: 'after' } });
    await client.result(marker);
    await expect.poll(async () => (await client!.redis.client.xPending(client!.redis.key(STREAM), GROUP)).pending, { timeout: 10_000 }).toBe(0);

    expect(await client.results(skipped)).toEqual([]);
    expect(await client.results(late)).toEqual([]);
    expect(records(file)).toEqual([]);
  });

  it('finishes the call it holds on SIGTERM, leaves its catalogue and exits 0', async () => {
    client = await connectStreamClient();
    const { child, workerId } = await startWorker(writeWorkerConfig(client.prefix), ['--metrics-port', '0']);
    const file = effectsFile();
    const call = await client.publish({ toolName: 'slow', arguments: { file, ms: 1_500 } });
    await expect.poll(() => records(file).length, { timeout: 15_000 }).toBe(1);

    const exit = await child.stop('SIGTERM', 15_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await client.result(call, 1_000)).toMatchObject({ content: 'Slept 1500 ms', isError: false });
    expect(records(file)).toEqual([`start ${call.idempotencyKey}`, `effect ${call.idempotencyKey}`]);
    expect(await catalogue(client, workerId)).toBeUndefined();
    // Nothing left pending for another worker, and the stopped worker left the group.
    const consumers = await client.redis.client.xInfoConsumers(client.redis.key(STREAM), GROUP);
    expect(consumers.map((consumer) => consumer.name)).not.toContain(workerId);
  });

  it('serves /metrics: calls, failures, reclaims, dead letters and the duration histogram', async () => {
    client = await connectStreamClient();
    const { child } = await startWorker(writeWorkerConfig(client.prefix), ['--metrics-port', '0']);
    const url = /metrics at (\S+)\/metrics/.exec(child.stdout())![1]!;
    const ok = await client.publish({ toolName: 'echo', arguments: { text: 'x' } });
    const failed = await client.publish({ toolName: 'no_such_tool', arguments: {} });
    await client.result(ok);
    await client.result(failed);
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain('palaver_worker_tool_calls_total{tool="echo",outcome="ok"} 1');
    expect(text).toContain('palaver_worker_tool_failures_total{tool="no_such_tool"} 1');
    expect(text).toContain('palaver_worker_tool_call_seconds_count{tool="echo"} 1');
    expect(text).toMatch(/palaver_worker_reclaims_total \d/);
    expect(text).toMatch(/palaver_worker_dead_letters_total/);
  });
});

describe('palaver doctor with tools.dispatch "streams"', { timeout: 60_000 }, () => {
  const configFor = (prefix: string, url = 'redis://127.0.0.1:6379') =>
    parseConfig({ model: { name: 'test-model' }, tools: { dispatch: 'streams', stream: STREAM, group: GROUP }, redis: { url, keyPrefix: prefix } });

  it('says what is missing before a worker ran, then names the live worker', async () => {
    client = await connectStreamClient();
    const before = await checkToolStreams(configFor(client.prefix));
    expect(before.map(({ name, ok }) => [name, ok])).toEqual([
      ['redis', true],
      ['tool workers group', false],
      ['live tool workers', false],
    ]);

    const { workerId } = await startWorker(writeWorkerConfig(client.prefix));
    const after = await checkToolStreams(configFor(client.prefix));
    expect(after.every((check) => check.ok)).toBe(true);
    expect(after.find((check) => check.name === 'live tool workers')?.detail).toBe(`${workerId} (5 tools)`);
  });

  it('fails the Redis check, without the password, when Redis cannot be reached', async () => {
    const checks = await checkToolStreams(configFor('test:doctor:', 'redis://:hunter2-secret@127.0.0.1:1'));
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: 'redis', ok: false });
    expect(checks[0]!.detail).toContain('127.0.0.1:1');
    expect(checks[0]!.detail).not.toContain('hunter2');
  });
});
