import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { DeliveryRecord, Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ScriptedModelServer } from '../../src/testing/index.js';
import { killAll } from '../cli/child-process.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { loadChild, startChild } from './standby-child.js';

const LEASE_MS = 600;
const CHAT = 5151;

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
  { name: 'SQLite', url: async () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-plan-crash-db-')), 'palaver.db')}` },
  {
    name: 'PostgreSQL',
    url: async () => {
      postgres = await createTestPostgresDatabase();
      return postgres.url;
    },
  },
];

/** The outbox records of the chat's reply plan, in plan order (all are parts of the turn's one reply). */
async function planRecords(databaseUrl: string): Promise<readonly DeliveryRecord[]> {
  store ??= await openStore(databaseUrl, { migrate: false });
  const session = await store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(CHAT));
  if (!session) return [];
  const [first] = (await store.messages.listRecent(session.id, { limit: 20, audience: 'display' })).filter((message) => message.role === 'assistant');
  return first ? store.deliveries.listForReply(first.id) : [];
}

describe.each(DATABASES)('a reply plan after a crash, on $name', ({ url }) => {
  it('sends the second message exactly once after a SIGKILL between the two, and the first never again', async () => {
    const databaseUrl = await url();
    const dir = mkdtempSync(join(tmpdir(), 'palaver-plan-crash-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    const plan = {
      actions: [
        { type: 'send_message', text: 'One moment, I am looking.', reply_to: null },
        { type: 'wait', seconds: 30 },
        { type: 'send_message', text: 'Found it: table for two at 8.', reply_to: null },
      ],
    };
    model = await startScriptedModelServer({ script: () => ({ text: JSON.stringify(plan) }) });
    telegram = await startFakeTelegram();
    const config = JSON.stringify({
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: databaseUrl },
      agent: { instructionsDir: join(dir, 'instructions'), replies: 'actions', actions: { typingCharsPerSecond: 0 } },
      inbox: { leaseMs: LEASE_MS },
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
    });
    const first = await startChild(loadChild(config), 20_000);
    // The restart's process loads meanwhile (see loadChild), and starts once the first is killed.
    const successor = loadChild(config);
    telegram.sendText({ chatId: CHAT, text: 'a table tonight?' });
    await telegram.waitForMessages(1, { chatId: CHAT, timeoutMs: 15_000 });
    // The first message is marked sent and the plan waits its 30 s: the process dies in the middle of the plan.
    await expect
      .poll(async () => (await planRecords(databaseUrl)).map((record) => record.state), { timeout: 10_000, interval: 50 })
      .toEqual(['sent', 'pending']);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

    // The next process carries out the rest once its lease ran out (the wait is not replayed), without the model.
    const second = await startChild(successor, 20_000);
    await telegram.waitForMessages(2, { chatId: CHAT, timeoutMs: 15_000 });
    await expect.poll(async () => (await planRecords(databaseUrl)).map((record) => record.state), { timeout: 10_000, interval: 50 }).toEqual(['sent', 'sent']);
    // Nothing to wait for: what is checked is that no repeat comes, over a few more recovery rounds (a third of a lease each).
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 2));
    expect(telegram.sentTo(CHAT).map((message) => message.text)).toEqual(['One moment, I am looking.', 'Found it: table for two at 8.']);
    expect(model.calls).toHaveLength(1);
    await second.stop('SIGTERM');
  }, 90_000);
});
