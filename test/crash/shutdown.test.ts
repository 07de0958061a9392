import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram, startScriptedModelServer, type FakeTelegram, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, PALAVER_BIN, spawnNode, type RunningChild } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';

// `palaver start` as a process, stopped by signals while a turn waits on a model that does not answer and a reply
// is owed to a Telegram API that does not answer either.

const LEASE_MS = 600;
const GRACE_MS = 1_500;
/** Generous: this bounds the shutdown, it does not time it (starting Node alone takes seconds on a busy machine). */
const MARGIN_MS = 8_000;

let model: ScriptedModelServer | undefined;
let telegram: FakeTelegram | undefined;
let releaseModel: (() => void) | undefined;
afterEach(async () => {
  await killAll();
  releaseModel?.();
  await model?.close();
  await telegram?.close();
  model = telegram = releaseModel = undefined;
});

/** A scripted model that never answers "slow" while `holding`, and echoes everything else at once. */
async function startHeldModel(): Promise<{ holding: { on: boolean } }> {
  const holding = { on: true };
  const held = new Promise<void>((resolve) => (releaseModel = resolve));
  model = await startScriptedModelServer({
    script: async (call) => {
      const text = userTexts(call).at(-1);
      if (holding.on && text === 'slow') await held;
      return { text: `You said: ${text}` };
    },
  });
  return { holding };
}

function writeConfig(graceMs: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-shutdown-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  writeFileSync(
    join(dir, 'palaver.config.json'),
    JSON.stringify({
      model: { name: 'scripted', baseUrl: model!.baseUrl, maxRetries: 0, timeoutMs: 120_000 },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions') },
      inbox: { leaseMs: LEASE_MS },
      server: { shutdownGraceMs: graceMs },
      channels: { web: { enabled: false }, telegram: { token: telegram!.token, apiRoot: telegram!.apiRoot, quietWindowMs: 50, drafts: false } },
    }),
  );
  return dir;
}

async function startPalaver(dir: string): Promise<RunningChild> {
  const child = spawnNode(PALAVER_BIN, ['start', '--port', '0', '-c', join(dir, 'palaver.config.json')], { cwd: dir, env: cleanEnv() });
  await child.waitForOutput(/Palaver is listening on/, 30_000);
  return child;
}

/** A turn waiting on the model (chat 2) and a reply waiting on Telegram's sendMessage (chat 1). */
async function busyWithUnreachableWork(child: RunningChild): Promise<void> {
  telegram!.hang('sendMessage');
  telegram!.hang('sendChatAction');
  telegram!.sendText({ chatId: 1, text: 'quick' });
  telegram!.sendText({ chatId: 2, text: 'slow' });
  await telegram!.waitForCall('sendMessage', (call) => Number(call.params['chat_id']) === 1, { timeoutMs: 20_000 });
  await expect.poll(() => model!.calls.flatMap(userTexts), { timeout: 20_000 }).toContain('slow');
  expect(child.process.exitCode).toBeNull();
}

describe('palaver start: shutdown', () => {
  it('ends within the grace period on SIGTERM while a model and Telegram do not answer; after a restart both messages are answered once', async () => {
    const { holding } = await startHeldModel();
    telegram = await startFakeTelegram();
    const dir = writeConfig(GRACE_MS);
    const first = await startPalaver(dir);
    await busyWithUnreachableWork(first);

    const signalledAt = Date.now();
    first.process.kill('SIGTERM');
    const exit = await first.waitForExit(GRACE_MS + MARGIN_MS);
    expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS + MARGIN_MS);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(first.stderr() + first.stdout()).toMatch(/shutdown grace period/);
    expect(telegram.sent).toEqual([]);

    // Telegram and the model are back; the leased work is recovered by the next process. The dead process's
    // sendMessage must be gone first (its connection closed), or the fake would carry it out after all and the
    // part would reach the chat twice: once from the dead process, once from its successor.
    holding.on = false;
    await expect.poll(() => telegram!.hanging('sendMessage'), { timeout: 10_000 }).toBe(0);
    telegram.hang('sendMessage', false);
    telegram.hang('sendChatAction', false);
    const second = await startPalaver(dir);
    await telegram.waitForMessages(1, { chatId: 1, timeoutMs: 20_000 });
    await telegram.waitForMessages(1, { chatId: 2, timeoutMs: 20_000 });
    // Two more lease periods: nothing is answered again.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS * 2));
    expect(telegram.sentTo(1).map((message) => message.text)).toEqual(['You said: quick']);
    expect(telegram.sentTo(2).map((message) => message.text)).toEqual(['You said: slow']);
    expect(await second.stop('SIGTERM', GRACE_MS + MARGIN_MS)).toEqual({ code: 0, signal: null });
  }, 120_000);

  it('exits at once on a second signal during the grace period', async () => {
    await startHeldModel();
    telegram = await startFakeTelegram();
    const graceMs = 120_000;
    const dir = writeConfig(graceMs);
    const child = await startPalaver(dir);
    await busyWithUnreachableWork(child);

    child.process.kill('SIGTERM');
    await child.waitForOutput(/Shutting down/, 10_000);
    child.process.kill('SIGINT');
    const exit = await child.waitForExit(MARGIN_MS);
    expect(exit.code).toBe(130);
  }, 120_000);
});
