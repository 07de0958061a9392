import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnTs } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';

const CHILD = fileURLToPath(new URL('./palaver-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let telegram: FakeTelegram | undefined;
afterEach(async () => {
  await killAll();
  await model?.close();
  await telegram?.close();
  model = telegram = undefined;
});

describe('Telegram bot after a crash', () => {
  it('answers a message accepted before a SIGKILL exactly once after restart, and repeats no update', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-telegram-crash-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    let holdFirstCall = true;
    model = await startScriptedModelServer({
      script: async (call) => {
        if (holdFirstCall) {
          holdFirstCall = false;
          // The first process is killed while this call is under way.
          await new Promise((resolve) => setTimeout(resolve, 30_000));
        }
        return { text: `You said: ${userTexts(call).at(-1)}` };
      },
    });
    telegram = await startFakeTelegram();
    const config = JSON.stringify({
      model: { name: 'scripted', baseUrl: model.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions') },
      inbox: { leaseMs: LEASE_MS },
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
    });

    const first = spawnTs(CHILD, [config], { cwd: REPO_ROOT, env: cleanEnv() });
    await first.waitForOutput(/^ready$/m, 20_000);
    telegram.sendText({ chatId: 4242, text: 'are you there?' });
    await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(1);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    expect(telegram.sentTo(4242)).toEqual([]);

    const second = spawnTs(CHILD, [config], { cwd: REPO_ROOT, env: cleanEnv() });
    await second.waitForOutput(/^ready$/m, 20_000);
    const [reply] = await telegram.waitForMessages(1, { chatId: 4242, timeoutMs: 15_000 });
    expect(reply!.text).toBe('You said: are you there?');
    // Two more lease periods: nobody answers it again, and a new message is answered as usual, once.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 2));
    telegram.sendText({ chatId: 4242, text: 'still here' });
    await telegram.waitForMessages(2, { chatId: 4242, timeoutMs: 15_000 });
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
    expect(telegram.sentTo(4242).map((message) => message.text)).toEqual(['You said: are you there?', 'You said: still here']);
    // The model was asked three times: the call the crash cut off, the recovered answer, the new message.
    expect(model.calls).toHaveLength(3);
    await second.stop('SIGTERM');
  }, 90_000);
});
