import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planFor } from '../../examples/receptionist/scripted-model.js';
import { startExample, type RunningExample } from '../../examples/receptionist/run.js';
import { TelegramBotChannel } from '../../src/channels/telegram-bot/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { startFakeTelegram, type FakeTelegram } from '../../src/testing/index.js';
import { killAll, REPO_ROOT, spawnNode, typeLines } from '../cli/child-process.js';

const RUN = join(REPO_ROOT, 'examples', 'receptionist', 'run.ts');
vi.setConfig({ testTimeout: 60_000 });

let example: RunningExample | undefined;
let telegram: FakeTelegram | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  await example?.close();
  await telegram?.close();
  example = undefined;
  telegram = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('examples/receptionist', () => {
  it('answers on Telegram as a person does: a reaction on the message, then two short messages', async () => {
    telegram = await startFakeTelegram();
    const dataDir = mkdtempSync(join(tmpdir(), 'palaver-receptionist-'));
    dirs.push(dataDir);
    const channel = new TelegramBotChannel({
      token: telegram.token,
      apiRoot: telegram.apiRoot,
      quietWindowMs: 50,
      drafts: false,
      pollTimeoutSeconds: 1,
      logger: silentLogger(),
    });
    // The example as configured (replies: actions, its limits), with the typing before each message turned off so
    // the test does not wait for it.
    example = await startExample(
      { realModel: false, dataDir },
      {
        channels: [channel],
        quietLogs: true,
        configure: (config) => ({ ...config, agent: { ...config.agent, actions: { ...config.agent.actions, typingCharsPerSecond: 0 } } }),
      },
    );

    const update = telegram.sendText({ chatId: 5150, text: 'Thursday please' });
    const asked = (update['message'] as { message_id: number }).message_id;
    const replies = await telegram.waitForMessages(2, { chatId: 5150 });
    expect(replies.map((message) => message.text)).toEqual(["Done, you're booked for Thursday at 10:00.", 'We will text you a reminder the day before.']);
    await telegram.waitForCall('setMessageReaction');
    expect(telegram.reactions).toEqual([expect.objectContaining({ chatId: 5150, messageId: asked, emoji: '👍' })]);
    // The model was shown the message's id, and nothing else was sent.
    expect(example.model!.calls[0]!.messages.at(-1)).toMatchObject({ content: `[message_id: ${asked}] Thursday please` });
    expect(telegram.sentTo(5150)).toHaveLength(2);
  });
});

describe('examples/receptionist/run.ts', () => {
  it('chats in the terminal: a greeting is answered with two messages, an "ok" with nothing', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'palaver-receptionist-'));
    dirs.push(dataDir);
    const child = spawnNode(RUN, ['chat', '--data', dataDir], { cwd: REPO_ROOT });
    typeLines(child, ['hello', 'ok', '/exit']);
    // The greeting is paced as a person types (about 4 s), on top of starting tsx: more than the default 15 s on a busy machine.
    expect(await child.waitForExit(45_000)).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    expect(out).toContain('SCRIPTED MODEL');
    expect(out.match(/^bot> .*$/gm)).toEqual(['bot> Hello, this is Mia from Harbour Dental 😊', 'bot> How can I help you today?']);
  });
});

describe('the receptionist script', () => {
  it('reacts only to the id it was shown, splits its answers, and stays silent after an "ok"', () => {
    expect(planFor('hello', '7')).toEqual([
      { type: 'fake_typing', seconds: 1 },
      { type: 'send_messages', messages: [expect.any(String), expect.any(String)] },
    ]);
    expect(planFor('thanks a lot', '12')[0]).toEqual({ type: 'add_reaction', emoji: '❤️', message_id: 12 });
    expect(planFor('thanks a lot', undefined).map((action) => action.type)).toEqual(['send_message']);
    expect(planFor('I would like to book a cleaning', 'web-3').map((action) => action.type)).toEqual(['add_reaction', 'send_message', 'wait', 'send_message']);
    expect(planFor('ok', '9')).toEqual([{ type: 'ignore', reason: expect.any(String) }]);
    expect(planFor('my face is swollen', '4')[0]).toMatchObject({ type: 'send_message', reply_to: 4 });
  });
});
