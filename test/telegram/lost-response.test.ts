import { afterEach, describe, expect, it } from 'vitest';
import { createTelegramRig, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

// Telegram carried out the call, then the connection broke before its answer reached the bot. The Bot API has no
// idempotency key for sendMessage, so the bot cannot tell "sent" from "never arrived": it sends again.
describe('telegram bot: an answer lost after Telegram committed the call', () => {
  it('repeats a reply part exactly once when the answer to its sendMessage is lost (the pinned repeat), and then stops', async () => {
    rig = await createTelegramRig(() => ({ text: 'Your table is booked.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    telegram.loseResponseNext('sendMessage');
    telegram.sendText({ chatId: 21, text: 'book a table' });
    // grammY's auto-retry takes the cut connection for a network error and sends the part again (after 3 s).
    await telegram.waitForMessages(2, { chatId: 21, timeoutMs: 15_000 });
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(21).map((message) => message.text)).toEqual(['Your table is booked.', 'Your table is booked.']);
    expect(telegram.callsOf('sendMessage')).toHaveLength(2);
    // The part is marked sent with the repeat's message id: no recovery sends it a third time.
    expect(harness.model.calls).toHaveLength(1);
  }, 30_000);

  it('answers once when the answer to a getUpdates is lost: the updates come again and are stored once', async () => {
    rig = await createTelegramRig(() => ({ text: 'Hello to you.' }), { quietWindowMs: 100 });
    const { telegram, harness } = rig;
    // The next poll hands the update over, and the bot never sees it: its offset stays, so the next poll brings it again.
    telegram.loseResponseNext('getUpdates');
    telegram.sendText({ chatId: 22, text: 'hello' });
    await telegram.waitForMessages(1, { chatId: 22, timeoutMs: 15_000 });
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(22).map((message) => message.text)).toEqual(['Hello to you.']);
    expect(harness.model.calls).toHaveLength(1);
  }, 30_000);
});
