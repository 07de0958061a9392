import { Bot } from 'grammy';
import type { Update } from 'grammy/types';
import { afterEach, describe, expect, it } from 'vitest';
import { DurablePoller } from '../../src/channels/telegram-bot/polling.js';
import type { ChannelStateStore } from '../../src/domain/ports/channel.js';
import { createLogger } from '../../src/observability/logger.js';
import { startFakeTelegram, type FakeTelegram } from '../../src/testing/index.js';
import { createTelegramRig, logsWith, userTexts, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
let fake: FakeTelegram | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  await fake?.close();
  fake = undefined;
});

const echo = (call: Parameters<Parameters<typeof createTelegramRig>[0]>[0]) => ({ text: `seen: ${userTexts(call).at(-1)}` });

describe('telegram bot: long polling', () => {
  it('neither repeats nor skips updates across a restart: the offset is kept in the database', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 40, text: 'before the restart' });
    await telegram.waitForMessages(1, { chatId: 40 });
    const lastBefore = telegram.updates.at(-1)!.update_id;
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) === lastBefore + 1);
    await rig.palaver.close();

    // Written while Palaver was down.
    telegram.sendText({ chatId: 40, text: 'while it was down' });
    const pollsBefore = telegram.callsOf('getUpdates').length;
    await rig.start();
    // The new process starts from the stored offset, not from 0.
    expect(telegram.callsOf('getUpdates')[pollsBefore]!.params['offset']).toBe(lastBefore + 1);
    await telegram.waitForMessages(2, { chatId: 40 });
    await waitUntilSettled(harness, 2);
    expect(telegram.sentTo(40).map((m) => m.text)).toEqual(['seen: before the restart', 'seen: while it was down']);
    expect(harness.model.calls).toHaveLength(2);
  });

  it('a fake Telegram started afresh against the same database gets its messages answered (its ids never repeat)', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 41, text: 'first run' });
    await telegram.waitForMessages(1, { chatId: 41 });
    await rig.palaver.close();
    await telegram.close();

    // A new fake, as a rerun of a test script against the same database would start: the stored polling offset and
    // the stored message ids must not swallow its updates as old ones or duplicates.
    fake = await startFakeTelegram();
    const palaver = await harness.start({
      channels: { web: { enabled: false }, telegram: { token: fake.token, apiRoot: fake.apiRoot, quietWindowMs: 50, drafts: false } },
    });
    rig.palaver = palaver;
    fake.sendText({ chatId: 41, text: 'second run' });
    await fake.waitForMessages(1, { chatId: 41 });
    expect(fake.sentTo(41).map((message) => message.text)).toEqual(['seen: second run']);
    expect(harness.model.calls).toHaveLength(2);
  });

  it('acknowledges an update only after it is stored: the next poll waits, and a stop leaves it for the next start', async () => {
    fake = await startFakeTelegram();
    const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
    const state = memoryState();
    const stored: number[] = [];
    let failing = true;
    let giveUps = 0;
    const poller = () =>
      new DurablePoller({
        api: bot.api,
        state,
        offsetKey: 'offset:test',
        handle: async (update: Update) => {
          if (failing) throw new Error('database is down');
          stored.push(update.update_id);
        },
        // With the database down a dead letter cannot be stored either: the update is kept, never skipped.
        giveUp: async () => {
          giveUps++;
          if (failing) throw new Error('database is down');
        },
        maxAttempts: 2,
        retryDelayMs: 20,
        allowedUpdates: ['message'],
        logger: createLogger({ level: 'silent' }),
        timeoutSeconds: 1,
        onFatal: () => {},
      });
    const first = poller();
    const update = fake.sendText({ chatId: 1, text: 'keep me' });
    await first.start();
    // Past maxAttempts more than once: each time the dead letter could not be stored either.
    await expect.poll(() => giveUps, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    // The update could not be stored: no poll asked past it, and nothing was saved.
    expect(fake.callsOf('getUpdates').every((call) => Number(call.params['offset'] ?? 0) <= update.update_id)).toBe(true);
    expect(await state.get('offset:test')).toBeUndefined();
    await first.stop();

    failing = false;
    const second = poller();
    await second.start();
    await fake.waitForCall('getUpdates', (call) => Number(call.params['offset']) === update.update_id + 1);
    expect(stored).toEqual([update.update_id]);
    expect(await state.get('offset:test')).toBe(String(update.update_id + 1));
    await second.stop();
  });

  it('one poller per bot: a second process on the same database stands by, takes over when the first stops, and a forced 409 refuses a start', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    const first = rig.palaver;
    const polling = (palaver: typeof first) => (palaver.channels.find((c) => c.name === 'telegram-bot') as unknown as { isPolling: boolean }).isPolling;
    const second = await rig.start();
    // The second holds back: no poll of its own terminates the first one's (no 409 anywhere).
    expect(polling(first)).toBe(true);
    expect(polling(second)).toBe(false);
    expect(logsWith(harness, 'standing by to take over')).toHaveLength(1);
    telegram.sendText({ chatId: 50, text: 'who answers?' });
    await telegram.waitForMessages(1, { chatId: 50 });
    await waitUntilSettled(harness, 1);
    expect(logsWith(harness, 'telegram polling stopped')).toHaveLength(0);

    // A graceful stop releases the lease: the one standing by polls next, from the offset the first saved.
    const offset = Number(telegram.callsOf('getUpdates').at(-1)!.params['offset']);
    await first.close();
    await expect.poll(() => polling(second), { timeout: 5_000 }).toBe(true);
    expect(Number(telegram.callsOf('getUpdates').at(-1)!.params['offset'])).toBe(offset);
    telegram.sendText({ chatId: 50, text: 'and now?' });
    await telegram.waitForMessages(2, { chatId: 50 });
    await waitUntilSettled(harness, 2);
    expect(telegram.sentTo(50).map((m) => m.text)).toEqual(['seen: who answers?', 'seen: and now?']);

    await second.close();
    telegram.setConflict(true);
    await expect(rig.start()).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/Only one poller per token may run/) });
  });
});

describe('telegram bot: updates that cannot be handled', () => {
  it('moves past a malformed update: stored as a dead letter, logged and counted, and the next message is answered', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 }, { start: false });
    const { telegram, harness } = rig;
    const from = { id: 61, is_bot: false, first_name: 'Pat' };
    // A message without a chat (grammY's own code throws on it) and one whose chat id is not a number.
    const chatless = telegram.enqueue({ message: { message_id: 1, date: 0, from, text: 'no chat at all' } });
    const wordChat = telegram.enqueue({ message: { message_id: 2, date: 0, from, chat: { id: 'sixty-one', type: 'private' }, text: 'a chat id in words' } });
    // The first poll (at start) takes both; the good message comes only after them.
    await rig.start();
    telegram.sendText({ chatId: 61, text: 'and now a real one' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 61 });
    expect(reply!.text).toBe('seen: and now a real one');

    for (const poison of [chatless, wordChat]) {
      const stored = await rig.palaver.store.channelState.get('telegram-bot', `dead-letter:${poison.update_id}`);
      expect(stored, `dead letter of ${poison.update_id}`).toBeDefined();
      expect(JSON.parse(stored!)).toMatchObject({ reason: 'malformed', update: { update_id: poison.update_id } });
    }
    // Never stored as a message, never asked of the model.
    expect(harness.model.calls.flatMap(userTexts)).toEqual(['and now a real one']);
    expect(logsWith(harness, 'telegram update dropped')).toHaveLength(2);
    expect(await rig.palaver.metrics.registry.getSingleMetricAsString('palaver_channel_dead_letters_total')).toContain(
      'palaver_channel_dead_letters_total{channel="telegram-bot",reason="malformed"} 2',
    );
  });

  it('gives up on an update whose handling keeps failing after maxAttempts: dead-lettered, and polling goes on past it', async () => {
    fake = await startFakeTelegram();
    const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
    const state = memoryState();
    const attempts = new Map<number, number>();
    const handled: number[] = [];
    const deadLetters: { updateId: number; attempts: number; error: string }[] = [];
    const poison = fake.sendText({ chatId: 1, text: 'always fails' });
    const poller = new DurablePoller({
      api: bot.api,
      state,
      offsetKey: 'offset:test',
      handle: async (update: Update) => {
        attempts.set(update.update_id, (attempts.get(update.update_id) ?? 0) + 1);
        if (update.update_id === poison.update_id) throw new TypeError('a bug this update always hits');
        handled.push(update.update_id);
      },
      giveUp: async (update, failure) =>
        void deadLetters.push({ updateId: update.update_id, attempts: failure.attempts, error: (failure.error as Error).message }),
      maxAttempts: 3,
      retryDelayMs: 5,
      allowedUpdates: ['message'],
      logger: createLogger({ level: 'silent' }),
      timeoutSeconds: 1,
      onFatal: () => {},
    });
    await poller.start();
    const good = fake.sendText({ chatId: 2, text: 'fine' });
    await fake.waitForCall('getUpdates', (call) => Number(call.params['offset']) === good.update_id + 1);
    await poller.stop();
    expect(attempts.get(poison.update_id)).toBe(3);
    expect(deadLetters).toEqual([{ updateId: poison.update_id, attempts: 3, error: 'a bug this update always hits' }]);
    expect(handled).toEqual([good.update_id]);
    expect(await state.get('offset:test')).toBe(String(good.update_id + 1));
  });
});

function memoryState(): ChannelStateStore {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key),
    set: async (key, value) => void values.set(key, value),
    delete: async (key) => void values.delete(key),
  };
}
