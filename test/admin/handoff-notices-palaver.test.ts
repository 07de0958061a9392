import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { createTelegramRig, inboxState, userTexts, type TelegramRig } from '../telegram/telegram-support.js';

// A running Palaver tells operators as its config says: in their Telegram chat through the bot channel it runs (the
// real grammY client against the fake Bot API server), and by the signed webhook, from its own timer.

/** A plain secret (not `whsec_…`): its UTF-8 bytes are the key. */
const SECRET = 'a-plain-webhook-secret-of-32-chars';
const OPERATORS_CHAT = -1_000_777;

let rig: TelegramRig | undefined;
let harness: Harness | undefined;
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await rig?.close();
  await harness?.close();
  await receiver?.close();
  rig = harness = receiver = undefined;
});

describe('a running Palaver tells operators', () => {
  it("posts to the operators' Telegram chat and the webhook: who, why, the last messages as written, and the dashboard link", async () => {
    receiver = await startWebhookReceiver(SECRET);
    rig = await createTelegramRig(
      (call) => ({ text: `seen: ${userTexts(call).at(-1)}` }),
      { quietWindowMs: 50 },
      {
        config: {
          operators: {
            dashboardUrl: 'https://support.example.com',
            notify: { telegramChatId: OPERATORS_CHAT, webhookUrl: receiver.url, webhookSecret: SECRET },
          },
        },
      },
    );
    const { telegram, palaver } = rig;
    // Formatting characters a person typed must reach operators as typed, never as formatting.
    const said = 'I want <b>*a refund*</b> & [a person](https://evil.example)';
    telegram.sendText({ chatId: 31, from: { id: 31, first_name: 'Olena' }, text: said });
    await telegram.waitForMessages(1, { chatId: 31 });
    const [conversation] = (await palaver.store.operators.conversations({ limit: 1 })).items;
    expect(telegram.sentTo(OPERATORS_CHAT)).toEqual([]);

    await palaver.store.handoffs.open({
      sessionId: conversation!.sessionId,
      userId: conversation!.user.id,
      reason: 'a refund\nover the limit',
      source: 'model',
      at: Date.now(),
    });

    const [notice] = await telegram.waitForMessages(1, { chatId: OPERATORS_CHAT, timeoutMs: 15_000 });
    const title = `🙋 A person is wanted: ${conversation!.user.displayName} (telegram-bot)`;
    expect(notice!.text.split('\n')).toEqual([
      title,
      'Why: a refund over the limit',
      expect.stringMatching(/^Asked by the agent, \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/),
      '',
      'Last messages:',
      `› Person: ${said}`,
      `‹ Agent: seen: ${said}`,
      '',
      `Open it: https://support.example.com/admin#/conversations/${conversation!.sessionId}`,
    ]);
    expect(notice!.parseMode).toBeUndefined();
    expect(notice!.entities).toEqual([{ type: 'bold', offset: 0, length: title.length }]);

    await expect.poll(() => receiver!.received.length, { timeout: 10_000 }).toBe(1);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.json).toMatchObject({ type: 'handoff.requested', round: 1, sessionId: conversation!.sessionId, channel: 'telegram-bot' });
    // Counted once Telegram's and the receiver's answers are in.
    const metric = () => palaver.metrics.registry.getSingleMetricAsString('palaver_handoff_notices_total');
    await expect.poll(metric).toContain('palaver_handoff_notices_total{via="telegram",outcome="sent"} 1');
    await expect.poll(metric).toContain('palaver_handoff_notices_total{via="webhook",outcome="sent"} 1');
  }, 30_000);

  it("never answers the operators' own chat: a reply to a notice there, a mention, /start, is no conversation", async () => {
    rig = await createTelegramRig(
      (call) => ({ text: `seen: ${userTexts(call).at(-1)}` }),
      { quietWindowMs: 50 },
      {
        config: { operators: { notify: { telegramChatId: OPERATORS_CHAT } } },
      },
    );
    const { telegram, palaver, harness: h } = rig;
    telegram.sendText({ chatId: 32, from: { id: 32, first_name: 'Ivo' }, text: 'hello' });
    await telegram.waitForMessages(1, { chatId: 32 });
    const [conversation] = (await palaver.store.operators.conversations({ limit: 1 })).items;
    await palaver.store.handoffs.open({
      sessionId: conversation!.sessionId,
      userId: conversation!.user.id,
      reason: 'wants a person',
      source: 'model',
      at: Date.now(),
    });
    const [notice] = await telegram.waitForMessages(1, { chatId: OPERATORS_CHAT, timeoutMs: 15_000 });

    // Operators talk in their group as people do: replying to the bot's notice, mentioning it, sending /start.
    const operator = { id: 77, is_bot: false, first_name: 'Olena' };
    const group = { chatId: OPERATORS_CHAT, chatType: 'supergroup', from: operator } as const;
    telegram.sendGroupText({ ...group, text: 'mine', replyTo: { messageId: notice!.messageId, text: notice!.text } });
    telegram.sendGroupText({ ...group, text: 'who is this?', mention: true });
    const last = telegram.sendGroupText({ ...group, text: '/start' });
    // Handled once the poller asks for what comes after them: a message it would answer is stored by then.
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > last.update_id, { timeoutMs: 10_000 });
    expect(inboxState(h).received).toBe(1);
    expect(telegram.sentTo(OPERATORS_CHAT)).toHaveLength(1);
    expect(h.model.calls).toHaveLength(1);
    expect((await palaver.store.operators.conversations({ limit: 10 })).items).toHaveLength(1);
  }, 30_000);

  it('says at start that operators are not told in Telegram when the bot does not run', async () => {
    harness = await createHarness(() => ({ text: 'ok' }));
    const palaver = await harness.start({ operators: { notify: { telegramChatId: OPERATORS_CHAT } } });
    expect(await palaver.diagnose()).toContain(
      'operators.notify.telegramChatId is set, but the Telegram bot (channels.telegram) does not run here: operators are not told in Telegram',
    );
  });
});
