import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramRig, sleep, userTexts, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('telegram bot: a human-paced inbox', () => {
  it('answers a burst of three messages in one second with one turn and one reply', async () => {
    rig = await createTelegramRig((call) => ({ text: `got: ${userTexts(call).join(' + ')}` }), { quietWindowMs: 600 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 42, text: 'hi' });
    await sleep(300);
    telegram.sendText({ chatId: 42, text: 'I need' });
    await sleep(300);
    const last = telegram.sendText({ chatId: 42, text: 'a table for two' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 42 });
    expect(reply!.text).toBe('got: hi + I need + a table for two');
    // The reply came after the quiet window, not before it.
    expect(reply!.at - Number((last['message'] as { date: number }).date) * 1000).toBeGreaterThanOrEqual(0);
    await sleep(900);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.sentTo(42)).toHaveLength(1);
  });

  it('starts exactly one more turn for messages written while a turn runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    rig = await createTelegramRig(async (call) => {
      calls += 1;
      if (calls === 1) await held;
      return { text: `turn ${calls}: ${userTexts(call).at(-1) ?? ''}` };
    }, { quietWindowMs: 200 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 7, text: 'first' });
    await waitUntil(() => harness.model.calls.length === 1);
    telegram.sendText({ chatId: 7, text: 'second' });
    telegram.sendText({ chatId: 7, text: 'third' });
    await sleep(500);
    release();
    const replies = await telegram.waitForMessages(2, { chatId: 7 });
    await sleep(600);
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

async function waitUntil(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}
