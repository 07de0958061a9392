import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramRig, logsWith, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

describe('telegram bot: delivery', () => {
  it('waits out a 429 with retry_after and delivers the reply once', async () => {
    rig = await createTelegramRig(() => ({ text: 'Your table is booked.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.failNext('sendMessage', { retryAfter: 1 });
    telegram.sendText({ chatId: 5, text: 'book a table' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 5 });
    expect(reply!.text).toBe('Your table is booked.');
    const attempts = telegram.callsOf('sendMessage');
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(950);
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(5)).toHaveLength(1);
  });

  it('keeps a part in the outbox through a flood wait longer than it waits inline, and sends it once when allowed', async () => {
    rig = await createTelegramRig(() => ({ text: 'Your table is booked.' }), {}, { start: false });
    const { telegram, harness } = rig;
    // Nothing is waited out inside the call; recovery rounds every 100 ms pick the part up when its time comes.
    rig.palaver = await harness.start({
      inbox: { leaseMs: 300 },
      channels: {
        web: { enabled: false },
        telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false, floodWaitInlineMaxSeconds: 0 },
      },
    });
    telegram.failNext('sendMessage', { retryAfter: 2 });
    telegram.sendText({ chatId: 8, text: 'book a table' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 8, timeoutMs: 15_000 });
    expect(reply!.text).toBe('Your table is booked.');
    const attempts = telegram.callsOf('sendMessage');
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_950);
    expect(logsWith(harness, 'reply parts stay in the outbox')).toHaveLength(1);
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(8)).toHaveLength(1);
  });

  it('delivers a reply of 10,000 characters whole, in parts Telegram accepts', async () => {
    const paragraph = (n: number) => `Paragraph ${n}. ${'All work and no play makes a dull reply. '.repeat(12).trim()}`;
    const long = Array.from({ length: 20 }, (_, i) => paragraph(i + 1))
      .join('\n\n')
      .slice(0, 10_000);
    rig = await createTelegramRig(() => ({ text: long }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 6, text: 'tell me everything' });
    const parts = await telegram.waitForMessages(3, { chatId: 6 });
    await waitUntilSettled(harness, 1);
    const sent = telegram.sentTo(6);
    expect(sent.length).toBe(parts.length);
    for (const part of sent) expect(part.text.length).toBeLessThanOrEqual(4096);
    // Telegram refused nothing: every sendMessage call became a message.
    expect(telegram.callsOf('sendMessage')).toHaveLength(sent.length);
    expect(squash(sent.map((part) => part.text).join(' '))).toBe(squash(long));
  });

  it('cuts a runaway reply of 400,000 characters to agent.maxReplyChars, with a notice, in a few messages', async () => {
    const sentence = 'All work and no play makes a dull reply. ';
    const runaway = sentence.repeat(Math.ceil(400_000 / sentence.length)).slice(0, 400_000);
    rig = await createTelegramRig(() => ({ text: runaway }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 7, text: 'say it all' });
    // Parts are sent in order, and the notice ends the last one.
    await expect.poll(() => telegram.sentTo(7).at(-1)?.text.endsWith('[This answer was too long and has been shortened.]'), { timeout: 10_000 }).toBe(true);
    const sent = telegram.sentTo(7);
    // 16,000 characters at 4,096 a message: four or five messages, not 98.
    expect(sent.length).toBeGreaterThanOrEqual(4);
    expect(sent.length).toBeLessThanOrEqual(5);
    const [cut] = logsWith(harness, 'longer than agent.maxReplyChars');
    expect(cut).toMatchObject({ chars: runaway.trim().length, maxReplyChars: 16_000 });
    // The turn's closing log line follows its last part.
    await expect.poll(() => logsWith(harness, 'turn finished').length, { timeout: 10_000 }).toBe(1);
    const [finished] = logsWith(harness, 'turn finished');
    const [reply] = await rig.palaver.store.messages.listRecent(finished!['sessionId'] as string, { limit: 1, audience: 'display' });
    expect(reply!.content.length).toBeLessThanOrEqual(16_000);
    // Cut after a whole sentence, and stored exactly as it was sent.
    expect(reply!.content).toMatch(/reply\.\n\n\[This answer was too long and has been shortened\.\]$/);
    expect(squash(sent.map((part) => part.text).join(' '))).toBe(squash(reply!.content));
    expect(await rig.palaver.metrics.registry.getSingleMetricAsString('palaver_replies_cut_total')).toMatch(/palaver_replies_cut_total 1$/m);
  });

  it('sends Markdown as text with entities, never parse_mode', async () => {
    rig = await createTelegramRig(() => ({ text: 'Your order is **ready**: pick it up at `Desk 4`.' }), { quietWindowMs: 100 });
    const { telegram } = rig;
    telegram.sendText({ chatId: 8, text: 'is my order ready?' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 8 });
    expect(reply!.text).toBe('Your order is ready: pick it up at Desk 4.');
    expect(reply!.parseMode).toBeUndefined();
    expect(reply!.entities).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'bold', offset: reply!.text.indexOf('ready'), length: 5 }),
        expect.objectContaining({ type: 'code', offset: reply!.text.indexOf('Desk 4'), length: 6 }),
      ]),
    );
  });

  it('falls back to plain text when Telegram still refuses the entities', async () => {
    rig = await createTelegramRig(() => ({ text: 'A **bold** claim.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.failNext('sendMessage', { code: 400, description: "Bad Request: can't parse entities: Can't find end of the entity starting at byte offset 2" });
    telegram.sendText({ chatId: 9, text: 'claim something' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 9 });
    expect(reply!.text).toBe('A **bold** claim.');
    expect(reply!.entities).toBeUndefined();
    expect(logsWith(harness, 'refused the formatting')).toHaveLength(1);
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(9)).toHaveLength(1);
  });

  it('shows typing while the reply is written, and a live draft in a private chat when drafts are on', async () => {
    rig = await createTelegramRig(() => ({ text: 'Here is a considered answer to your question.', delayMs: 200 }), { quietWindowMs: 100, drafts: true });
    const { telegram } = rig;
    telegram.sendText({ chatId: 10, text: 'think about it' });
    const [reply] = await telegram.waitForMessages(1, { chatId: 10 });
    const typing = telegram.callsOf('sendChatAction');
    expect(typing.length).toBeGreaterThanOrEqual(1);
    expect(typing[0]!.params).toMatchObject({ chat_id: 10, action: 'typing' });
    expect(typing[0]!.at).toBeLessThanOrEqual(reply!.at);
    // The draft showed the reply as it was written, and only before the message that finalises it.
    const drafts = telegram.callsOf('sendMessageDraft');
    expect(drafts.length).toBeGreaterThanOrEqual(1);
    // Each draft is a non-empty beginning of the reply (an empty draft or a foreign text fails here).
    for (const draft of drafts) {
      const text = String(draft.params['text']);
      expect(text.length).toBeGreaterThan(0);
      expect('Here is a considered answer to your question.'.startsWith(text)).toBe(true);
    }
    for (const draft of telegram.callsOf('sendMessageDraft')) {
      expect(draft.params['chat_id']).toBe(10);
      expect(draft.at).toBeLessThanOrEqual(reply!.at);
    }
  });
});

function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
