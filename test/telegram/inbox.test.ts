import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramRig, inboxState, userTexts, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('telegram bot: a human-paced inbox', () => {
  it('answers a burst of three messages with one turn and one reply, after the quiet window', async () => {
    rig = await createTelegramRig((call) => ({ text: `got: ${userTexts(call).join(' + ')}` }), { quietWindowMs: 600 });
    const { telegram, harness } = rig;
    // Each message follows as soon as the bot has stored the one before: well inside the quiet window.
    telegram.sendText({ chatId: 42, text: 'hi' });
    await expect.poll(() => inboxState(harness).received).toBe(1);
    telegram.sendText({ chatId: 42, text: 'I need' });
    await expect.poll(() => inboxState(harness).received).toBe(2);
    const lastSentAt = Date.now();
    telegram.sendText({ chatId: 42, text: 'a table for two' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 42 });
    expect(reply!.text).toBe('got: hi + I need + a table for two');
    // The reply came a whole quiet window after the last message, not before it (both in milliseconds).
    expect(reply!.at - lastSentAt).toBeGreaterThanOrEqual(600);
    await waitUntilSettled(harness, 3);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.sentTo(42)).toHaveLength(1);
  });

  it('starts exactly one more turn for messages written while a turn runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    rig = await createTelegramRig(
      async (call) => {
        calls += 1;
        if (calls === 1) await held;
        return { text: `turn ${calls}: ${userTexts(call).at(-1) ?? ''}` };
      },
      { quietWindowMs: 200 },
    );
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 7, text: 'first' });
    await expect.poll(() => harness.model.calls.length).toBe(1);
    telegram.sendText({ chatId: 7, text: 'second' });
    telegram.sendText({ chatId: 7, text: 'third' });
    // Both are stored while the first turn still waits on the model.
    await expect.poll(() => inboxState(harness).received).toBe(3);
    release();
    const replies = await telegram.waitForMessages(2, { chatId: 7 });
    await waitUntilSettled(harness, 3);
    expect(harness.model.calls).toHaveLength(2);
    expect(telegram.sentTo(7).map((m) => m.text)).toEqual(['turn 1: first', 'turn 2: third']);
    expect(userTexts(harness.model.calls[1]!).slice(-2)).toEqual(['second', 'third']);
    expect(replies).toHaveLength(2);
  });

  it('gives two chats at once their own replies, and nothing of one reaches the other', async () => {
    rig = await createTelegramRig((call) => ({ text: `echo ${userTexts(call).at(-1)}` }), { quietWindowMs: 200, drafts: true });
    const { telegram } = rig;
    telegram.sendText({ chatId: 1001, text: 'apples' });
    telegram.sendText({ chatId: 1002, text: 'pears' });
    await telegram.waitForMessages(1, { chatId: 1001 });
    await telegram.waitForMessages(1, { chatId: 1002 });
    expect(telegram.sentTo(1001).map((m) => m.text)).toEqual(['echo apples']);
    expect(telegram.sentTo(1002).map((m) => m.text)).toEqual(['echo pears']);
    for (const call of telegram.callsOf('sendChatAction')) expect([1001, 1002]).toContain(Number(call.params['chat_id']));
    for (const call of telegram.callsOf('sendMessageDraft')) {
      const chat = Number(call.params['chat_id']);
      expect(String(call.params['text'] ?? '')).not.toContain(chat === 1001 ? 'pears' : 'apples');
    }
  });
});
