import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import type { ToolCallRequest } from '../../src/domain/ports/tool-dispatch.js';
import { silentLogger } from '../../src/observability/logger.js';
import { StreamsToolDispatcher } from '../../src/queue/streams-dispatcher.js';
import { KyselyStore, migrateToLatest, openSqliteDatabase } from '../../src/store/index.js';
import { killAll } from '../cli/child-process.js';
import { connectStreamClient, effectsFile, GROUP, startWorker, STREAM, writeWorkerConfig, type StreamClient } from './stream-client.js';

// The runtime's StreamsToolDispatcher (outbox, relay, response reader) against real `palaver worker` processes, on
// the machine's Redis under a prefix of the test's own.

const toClose: (() => Promise<unknown>)[] = [];
let client: StreamClient | undefined;
afterEach(async () => {
  for (const close of toClose.splice(0).reverse()) await close().catch(() => undefined);
  await killAll();
  await client?.close();
  client = undefined;
});

async function storeWithSession(): Promise<Store> {
  const dir = await mkdtemp(join(tmpdir(), 'palaver-dispatch-worker-'));
  const db = openSqliteDatabase(`sqlite:${join(dir, 'palaver.db')}`);
  await migrateToLatest(db);
  const now = Date.now();
  await db.insertInto('users').values({ id: 'alice', display_name: null, phone: null, created_at: now }).execute();
  await db
    .insertInto('sessions')
    .values({ id: 'session-1', user_id: 'alice', channel: 'web', conversation_id: 'conversation-1', title: null, created_at: now, updated_at: now })
    .execute();
  const store = new KyselyStore(db, { dialect: 'sqlite' });
  toClose.push(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function request(tool: string, args: Record<string, unknown>, callId: string): ToolCallRequest {
  return {
    callId,
    idempotencyKey: `turn-1:${callId}`,
    tool,
    arguments: args,
    userId: 'alice',
    accounts: [{ channel: 'web', accountId: 'alice' }],
    sessionId: 'session-1',
    conversationId: 'conversation-1',
    correlationId: 'corr-e2e',
    role: null,
    flowState: {},
  };
}

const records = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

describe('StreamsToolDispatcher with palaver worker processes', { timeout: 60_000 }, () => {
  it('dispatches through the outbox to a worker and gets the result with its effects; a worker killed mid-call costs no call', async () => {
    client = await connectStreamClient();
    const config = writeWorkerConfig(client.prefix, { tools: { reclaimIdleMs: 1_000 } });
    const workers = await Promise.all([startWorker(config), startWorker(config)]);
    const dispatcher = await StreamsToolDispatcher.start({
      redis: client.redis,
      store: await storeWithSession(),
      settings: { callTimeoutMs: 15_000, maxAttempts: 3, stream: STREAM, group: GROUP },
      logger: silentLogger(),
      sweepMs: 200,
    });
    toClose.push(() => dispatcher.close());
    const file = effectsFile();

    const booked = await dispatcher.dispatch(request('book', { file, what: 'a room' }, 'call-1'));
    expect(booked).toMatchObject({
      callId: 'call-1',
      content: 'Booked a room for alice',
      isError: false,
      effects: { flowState: { booking: { what: 'a room' } } },
    });

    const held = dispatcher.dispatch(request('book', { file, what: 'a car', holdFirst: true }, 'call-2'));
    await expect.poll(() => records(file).filter((line) => line.includes('turn-1:call-2')).length, { timeout: 15_000 }).toBe(1);
    const [pending] = await client.redis.client.xPendingRange(client.redis.key(STREAM), GROUP, '-', '+', 10);
    await workers.find((worker) => worker.workerId === pending!.consumer)!.child.stop('SIGKILL');
    expect(await held).toMatchObject({ content: 'Booked a car for alice', isError: false });
    expect(records(file).filter((line) => line.startsWith('effect turn-1:call-2'))).toHaveLength(1);
  });

  it('tells the model the tool failed when no worker can finish the call', async () => {
    client = await connectStreamClient();
    const config = writeWorkerConfig(client.prefix, { tools: { maxAttempts: 1, reclaimIdleMs: 500 } });
    await Promise.all([startWorker(config), startWorker(config)]);
    const dispatcher = await StreamsToolDispatcher.start({
      redis: client.redis,
      store: await storeWithSession(),
      settings: { callTimeoutMs: 20_000, maxAttempts: 1, stream: STREAM, group: GROUP },
      logger: silentLogger(),
      sweepMs: 200,
    });
    toClose.push(() => dispatcher.close());

    const result = await dispatcher.dispatch(request('crash', { file: effectsFile() }, 'call-1'));
    expect(result).toMatchObject({ isError: true, content: 'The tool crash failed: it could not be completed after 1 attempts.' });
    expect(await client.deadLetters()).toHaveLength(1);
  });
});
