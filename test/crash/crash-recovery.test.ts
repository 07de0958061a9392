import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let postgres: TestPostgresDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  await postgres?.drop();
  store = model = postgres = undefined;
});

/**
 * Kills a Palaver with SIGKILL while the model is still writing the answer to an accepted message, starts a new one
 * on the same database, and checks what a person would: the message is answered exactly once, and no session is
 * left running.
 */
async function killMidTurnAndRestart(databaseUrl: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-crash-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  let holdFirstCall = true;
  model = await startScriptedModelServer({
    script: async () => {
      if (holdFirstCall) {
        holdFirstCall = false;
        // The first process dies while this call is under way; it never gets the answer.
        await new Promise((resolve) => setTimeout(resolve, 30_000));
      }
      return { text: 'Yes, I am here.' };
    },
  });
  const args = [JSON.stringify({ databaseUrl, modelUrl: model.baseUrl, instructionsDir: join(dir, 'instructions'), leaseMs: LEASE_MS })];
  const start = async (): Promise<RunningChild> => {
    const child = spawnNode(CHILD, args, { cwd: REPO_ROOT, env: cleanEnv() });
    await child.waitForOutput(/^ready$/m, 20_000);
    return child;
  };

  const first = await start();
  first.process.stdin.write('are you there?\n');
  await first.waitForOutput(/^accepted /m);
  await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(1);
  const killed = await first.stop('SIGKILL');
  expect(killed.signal).toBe('SIGKILL');

  const second = await start();
  store = await openStore(databaseUrl, { migrate: false });
  const session = async () => {
    const user = await store!.users.findByAccount('chat', 'crash-tester');
    return user ? (await store!.sessions.listByUser(user.id))[0] : undefined;
  };
  // Answered once the dead process's lease ran out.
  await expect.poll(async () => (await session())?.status, { timeout: 10_000, interval: 100 }).toBe('completed');
  const answered = await session();
  // Answered and nothing left queued: no process has anything to take over, so this is the final count.
  const messages = await store.messages.listRecent(answered!.id, { limit: 10 });
  expect(messages.map((message) => `${message.role}: ${message.content}`)).toEqual(['user: are you there?', 'assistant: Yes, I am here.']);
  expect(await store.inbound.listQueued(answered!.id)).toEqual([]);
  expect(model.calls).toHaveLength(2);
  expect((await session())?.status).toBe('completed');
  await second.stop('SIGTERM');
}

/**
 * Kills a Palaver with SIGKILL after the reply was stored but while the channel is still sending its first part, and
 * checks that the restarted one sends every part exactly once.
 */
async function killMidDeliveryAndRestart(databaseUrl: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-crash-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  const reply = 'The first part of the answer. The second part of the answer.';
  model = await startScriptedModelServer({ script: () => ({ text: reply }) });
  const args = (blockSend: boolean) => [
    JSON.stringify({ databaseUrl, modelUrl: model!.baseUrl, instructionsDir: join(dir, 'instructions'), leaseMs: LEASE_MS, offline: true, blockSend }),
  ];
  const first = spawnNode(CHILD, args(true), { cwd: REPO_ROOT, env: cleanEnv() });
  await first.waitForOutput(/^ready$/m, 20_000);
  first.process.stdin.write('tell me\n');
  await first.waitForOutput(/^sending /m, 10_000);
  await first.stop('SIGKILL');

  const second = spawnNode(CHILD, args(false), { cwd: REPO_ROOT, env: cleanEnv() });
  await second.waitForOutput(/^ready$/m, 20_000);
  await second.waitForOutput(/^sent "The second part of the answer\."$/m, 10_000);
  // Every part of the reply is marked sent: nothing is left for any process to send, so this is the final count.
  store = await openStore(databaseUrl, { migrate: false });
  const user = await store.users.findByAccount('chat', 'crash-tester');
  const [session] = await store.sessions.listByUser(user!.id);
  const [stored] = await store.messages.listRecent(session!.id, { limit: 1 });
  await expect
    .poll(async () => (await store!.deliveries.listForReply(stored!.id)).map((part) => part.state), { timeout: 10_000, interval: 100 })
    .toEqual(['sent', 'sent']);
  const sent = second
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('sent '));
  expect(sent).toEqual(['sent "The first part of the answer."', 'sent "The second part of the answer."']);
  // The part the dead process was sending is sent again under the same delivery key (its outbox record's id), so a
  // messenger that dedupes by it (MTProto's random_id) drops the repeat.
  const keysOf = (child: RunningChild) =>
    child
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('key '));
  const [interrupted] = keysOf(first);
  const records = await store.deliveries.listForReply(stored!.id);
  expect(interrupted).toBe(`key ${records[0]!.id} "The first part of the answer."`);
  expect(keysOf(second)).toEqual([interrupted, `key ${records[1]!.id} "The second part of the answer."`]);
  // The model was asked once: the reply was stored before the crash, only its sending was resumed.
  expect(model.calls).toHaveLength(1);
  await second.stop('SIGTERM');
}

describe('crash recovery', () => {
  it('answers a message accepted before a SIGKILL exactly once after restart, on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-crash-db-'));
    await killMidTurnAndRestart(`sqlite:${join(dir, 'palaver.db')}`);
  }, 60_000);

  it('answers a message accepted before a SIGKILL exactly once after restart, on PostgreSQL', async () => {
    postgres = await createTestPostgresDatabase();
    await killMidTurnAndRestart(postgres.url);
  }, 60_000);

  it('sends a stored reply that a SIGKILL interrupted, each part once, on SQLite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-crash-db-'));
    await killMidDeliveryAndRestart(`sqlite:${join(dir, 'palaver.db')}`);
  }, 60_000);

  it('sends a stored reply that a SIGKILL interrupted, each part once, on PostgreSQL', async () => {
    postgres = await createTestPostgresDatabase();
    await killMidDeliveryAndRestart(postgres.url);
  }, 60_000);
});
