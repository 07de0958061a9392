import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { en } from '../../src/i18n/catalogues/en.js';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ScriptedModelServer } from '../../src/testing/index.js';
import { killAll } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';
import { readSqliteFile } from '../support/sqlite-file.js';
import { loadChild, startChild } from './standby-child.js';

// A crash storm (issue 34): a Telegram bot process is SIGKILLed and restarted 10 times while 30 chats write to it.
// A message that only waited (queued, or in its quiet window) when its process died is taken over at no cost and
// answered once its quiet window, counted from its arrival, is over: no chat is left with the apology.

const CHATS = Array.from({ length: 30 }, (_, index) => 5_001 + index);
const WAVES = 5;
/** How long each process lives once ready, in ms: all shorter than Telegram's quiet window (2.5 s, the default). */
const LIVES = [900, 1_400, 600, 1_700, 800, 1_200, 500, 1_500, 700, 1_000];

let model: ScriptedModelServer | undefined;
let telegram: FakeTelegram | undefined;
afterEach(async () => {
  await killAll();
  await model?.close();
  await telegram?.close();
  model = telegram = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const textOf = (chatId: number, wave: number) => `chat ${chatId} message ${wave + 1}`;

/** The inbox and outbox as the database holds them. */
function inboxState(databaseUrl: string): { readonly accepted: number; readonly queued: number; readonly unsent: number } {
  return readSqliteFile(databaseUrl, (db) => ({
    accepted: Number(db.get<{ n: number }>('SELECT count(*) AS n FROM inbound_messages')?.n),
    queued: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM inbound_messages WHERE state = 'queued'")?.n),
    unsent: Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")?.n),
  }));
}

describe('Telegram bot in a crash storm', () => {
  it("answers every chat's last message with its real answer, never the apology, across 10 SIGKILLs while 30 chats write", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-crash-storm-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    const databaseUrl = `sqlite:${join(dir, 'palaver.db')}`;
    model = await startScriptedModelServer({ script: (call) => ({ text: `You said: ${userTexts(call).at(-1)}` }) });
    telegram = await startFakeTelegram();
    // Telegram's own quiet window (2.5 s, the default) and attempts (3); a short lease, so a successor takes over soon.
    const config = JSON.stringify({
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: databaseUrl },
      agent: { instructionsDir: join(dir, 'instructions') },
      inbox: { leaseMs: 600 },
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, drafts: false } },
    });
    // Each successor loads its modules while its predecessor lives (see loadChild): one Palaver at a time, as before.
    const load = () => loadChild(config);

    let current = await startChild(load());
    for (const [index, life] of LIVES.entries()) {
      const successor = load();
      // The first processes each get a wave of messages half-way through their life: one from every chat.
      await sleep(life / 2);
      if (index < WAVES) for (const chatId of CHATS) telegram.sendText({ chatId, text: textOf(chatId, index) });
      await sleep(life / 2);
      expect((await current.stop('SIGKILL')).signal).toBe('SIGKILL');
      current = await startChild(successor);
    }

    await expect.poll(() => inboxState(databaseUrl), { timeout: 30_000, interval: 200 }).toEqual({ accepted: CHATS.length * WAVES, queued: 0, unsent: 0 });
    const apologies = telegram.sent.filter((message) => message.text.startsWith(en['turn.apology']));
    expect(apologies.map((message) => message.chatId)).toEqual([]);
    const lastAnswers = CHATS.map((chatId) => telegram!.sentTo(chatId).at(-1)?.text);
    expect(lastAnswers).toEqual(CHATS.map((chatId) => `You said: ${textOf(chatId, WAVES - 1)}`));
    await current.stop('SIGTERM');
  }, 240_000);
});
