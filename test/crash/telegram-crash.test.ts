import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ModelScript, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

const CHILD = fileURLToPath(new URL('./palaver-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let telegram: FakeTelegram | undefined;
let postgres: TestPostgresDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  await telegram?.close();
  await postgres?.drop();
  model = telegram = postgres = store = undefined;
});

const DATABASES: readonly { readonly name: string; readonly url: () => Promise<string> }[] = [
  { name: 'SQLite', url: async () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-telegram-crash-db-')), 'palaver.db')}` },
  {
    name: 'PostgreSQL',
    url: async () => {
      postgres = await createTestPostgresDatabase();
      return postgres.url;
    },
  },
];

/** A Palaver child process with the Telegram channel on the fake Bot API, on `databaseUrl`. */
async function rig(databaseUrl: string, script: ModelScript): Promise<{ start(): Promise<RunningChild> }> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-telegram-crash-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  model = await startScriptedModelServer({ script });
  telegram = await startFakeTelegram();
  const config = JSON.stringify({
    model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
    database: { url: databaseUrl },
    agent: { instructionsDir: join(dir, 'instructions') },
    inbox: { leaseMs: LEASE_MS },
    channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
  });
  return {
    async start() {
      const child = spawnNode(CHILD, [config], { cwd: REPO_ROOT, env: cleanEnv() });
      await child.waitForOutput(/^ready$/m, 20_000);
      return child;
    },
  };
}

/**
 * Resolves once the chat's conversation holds `answered` answered messages, none still queued, and every reply part
 * of it is sent: after this nothing is left for any process to take over, so the counts that follow are final.
 */
async function waitUntilSettled(databaseUrl: string, chatId: number, answered: number): Promise<void> {
  store ??= await openStore(databaseUrl, { migrate: false });
  const state = async () => {
    const session = await store!.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(chatId));
    if (!session) return undefined;
    const messages = await store!.messages.listRecent(session.id, { limit: 50 });
    const replies = messages.filter((message) => message.role === 'assistant');
    const parts = (await Promise.all(replies.map((reply) => store!.deliveries.listForReply(reply.id)))).flat();
    return {
      replies: replies.length,
      queued: (await store!.inbound.listQueued(session.id)).length,
      parts: parts.length,
      unsent: parts.filter((part) => part.state !== 'sent').length,
    };
  };
  await expect.poll(state, { timeout: 15_000, interval: 100 }).toEqual({ replies: answered, queued: 0, parts: answered, unsent: 0 });
}

describe.each(DATABASES)('Telegram bot after a crash, on $name', ({ url }) => {
  it('answers a message accepted before a SIGKILL exactly once after restart, and repeats no update', async () => {
    const databaseUrl = await url();
    let holdFirstCall = true;
    const processes = await rig(databaseUrl, async (call) => {
      if (holdFirstCall) {
        holdFirstCall = false;
        // The first process is killed while this call is under way.
        await new Promise((resolve) => setTimeout(resolve, 30_000));
      }
      return { text: `You said: ${userTexts(call).at(-1)}` };
    });

    const first = await processes.start();
    telegram!.sendText({ chatId: 4242, text: 'are you there?' });
    await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(1);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    expect(telegram!.sentTo(4242)).toEqual([]);

    const second = await processes.start();
    const [reply] = await telegram!.waitForMessages(1, { chatId: 4242, timeoutMs: 15_000 });
    expect(reply!.text).toBe('You said: are you there?');
    await waitUntilSettled(databaseUrl, 4242, 1);
    telegram!.sendText({ chatId: 4242, text: 'still here' });
    await telegram!.waitForMessages(2, { chatId: 4242, timeoutMs: 15_000 });
    await waitUntilSettled(databaseUrl, 4242, 2);
    expect(telegram!.sentTo(4242).map((message) => message.text)).toEqual(['You said: are you there?', 'You said: still here']);
    // The model was asked three times: the call the crash cut off, the recovered answer, the new message.
    expect(model!.calls).toHaveLength(3);
    await second.stop('SIGTERM');
  }, 90_000);

  it('sends a part Telegram took just before a SIGKILL once more after restart (the pinned repeat), and no other', async () => {
    const databaseUrl = await url();
    const processes = await rig(databaseUrl, (call) => ({ text: `You said: ${userTexts(call).at(-1)}` }));
    const first = await processes.start();
    // Telegram carries out the sendMessage, and its answer is held: the process dies before it can mark the part sent.
    const held = telegram!.holdResponseNext('sendMessage');
    telegram!.sendText({ chatId: 4343, text: 'book a table' });
    await held.applied;
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    held.release();
    expect(telegram!.sentTo(4343).map((message) => message.text)).toEqual(['You said: book a table']);

    // The part is still pending in the outbox: the next process cannot know Telegram took it, and sends it again.
    const second = await processes.start();
    await telegram!.waitForMessages(2, { chatId: 4343, timeoutMs: 15_000 });
    await waitUntilSettled(databaseUrl, 4343, 1);
    expect(telegram!.sentTo(4343).map((message) => message.text)).toEqual(['You said: book a table', 'You said: book a table']);
    // The stored reply was resent, not written again: the model was asked once.
    expect(model!.calls).toHaveLength(1);

    telegram!.sendText({ chatId: 4343, text: 'thanks' });
    await telegram!.waitForMessages(3, { chatId: 4343, timeoutMs: 15_000 });
    await waitUntilSettled(databaseUrl, 4343, 2);
    expect(telegram!.sentTo(4343).map((message) => message.text)).toEqual(['You said: book a table', 'You said: book a table', 'You said: thanks']);
    await second.stop('SIGTERM');
  }, 90_000);
});
