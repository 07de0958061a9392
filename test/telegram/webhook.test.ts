import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/http-server.js';
import { createTelegramRig, inboxState, logsWith, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await rig?.close();
  rig = undefined;
});

const SECRET = 'webhook-secret-for-tests_0123456789';

describe('telegram bot: webhook mode', () => {
  it('refuses webhook requests without the secret (logged, nothing stored), accepts them with it and answers 200 once stored', async () => {
    rig = await createTelegramRig(() => ({ text: 'Webhook reply.' }), { mode: 'webhook', webhookSecret: SECRET, quietWindowMs: 100 }, { start: false });
    const { telegram, harness } = rig;
    await rig.start();
    server = await rig.palaver.serve({ host: '127.0.0.1', port: 0 });
    const url = `${server.url}/telegram/webhook`;
    // What start registers when TELEGRAM_WEBHOOK_URL is set, done here by hand (the port is known only now).
    await fetch(`${telegram.apiRoot}/bot${telegram.token}/setWebhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url, secret_token: SECRET }),
    });
    expect(telegram.callsOf('getUpdates')).toHaveLength(0);

    const update = telegram.sendText({ chatId: 77, text: 'hello over webhook' });
    expect(await telegram.deliverToWebhook(update, { secretToken: null })).toBe(401);
    expect(await telegram.deliverToWebhook(update, { secretToken: 'wrong-secret-of-the-same-kind_0123' })).toBe(401);
    expect(logsWith(harness, 'webhook request refused')).toHaveLength(2);
    // Refused before it was read: nothing stored, so no turn can start.
    expect(inboxState(harness).received).toBe(0);
    expect(harness.model.calls).toHaveLength(0);

    expect(await telegram.deliverToWebhook(update)).toBe(200);
    const [reply] = await telegram.waitForMessages(1, { chatId: 77 });
    expect(reply!.text).toBe('Webhook reply.');
    // Telegram delivering it again (it did not see the 200) gets a 200 and no second answer.
    expect(await telegram.deliverToWebhook(update)).toBe(200);
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(77)).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(1);
  });

  it('answers a malformed update 400 (not 500, which Telegram would redeliver): kept as a dead letter, nothing stored', async () => {
    rig = await createTelegramRig(() => ({ text: 'Webhook reply.' }), { mode: 'webhook', webhookSecret: SECRET, quietWindowMs: 100 }, { start: false });
    const { telegram, harness } = rig;
    await rig.start();
    server = await rig.palaver.serve({ host: '127.0.0.1', port: 0 });
    await fetch(`${telegram.apiRoot}/bot${telegram.token}/setWebhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${server.url}/telegram/webhook`, secret_token: SECRET }),
    });
    const from = { id: 78, is_bot: false, first_name: 'Pat' };
    const chatless = { update_id: 900_001, message: { message_id: 1, date: 0, from, text: 'no chat' } };
    const wordChat = {
      update_id: 900_002,
      message: { message_id: 2, date: 0, from, chat: { id: 'seventy-eight', type: 'private' }, text: 'chat id in words' },
    };
    const fractional = { update_id: 900_003, message: { message_id: 3, date: 0, from, chat: { id: 78.5, type: 'private' }, text: 'half a chat' } };
    for (const update of [chatless, wordChat, fractional]) {
      expect(await telegram.deliverToWebhook(update), JSON.stringify(update)).toBe(400);
      const letter = await rig.palaver.store.channelState.get('telegram-bot', `dead-letter:${update.update_id}`);
      expect(JSON.parse(letter!)).toMatchObject({ reason: 'malformed', update: { update_id: update.update_id } });
    }
    // A good update right after is answered; none of the malformed ones reached the model.
    expect(await telegram.deliverToWebhook(telegram.sendText({ chatId: 78, text: 'a real one' }))).toBe(200);
    await telegram.waitForMessages(1, { chatId: 78 });
    expect(harness.model.calls).toHaveLength(1);
    expect(await rig.palaver.store.sessions.findByConversation('telegram-bot', 'seventy-eight')).toBeUndefined();
    expect(await rig.palaver.store.sessions.findByConversation('telegram-bot', 'undefined')).toBeUndefined();
  });

  it('gives up on an update that keeps failing after maxUpdateAttempts deliveries: 500 until then, then kept as a dead letter and 200', async () => {
    rig = await createTelegramRig(
      () => ({ text: 'Webhook reply.' }),
      { mode: 'webhook', webhookSecret: SECRET, quietWindowMs: 100, maxUpdateAttempts: 3 },
      { start: false },
    );
    const { telegram, harness } = rig;
    await rig.start();
    server = await rig.palaver.serve({ host: '127.0.0.1', port: 0 });
    await fetch(`${telegram.apiRoot}/bot${telegram.token}/setWebhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${server.url}/telegram/webhook`, secret_token: SECRET }),
    });
    // A business connection whose stored record is corrupt: every message through it fails the same way.
    await rig.palaver.store.channelState.set('telegram-bot', 'business-connection:bc-broken', '{not json');
    const poison = telegram.businessMessage({ chatId: 79, text: 'through a broken connection', connectionId: 'bc-broken' });
    expect(await telegram.deliverToWebhook(poison)).toBe(500);
    expect(await telegram.deliverToWebhook(poison)).toBe(500);
    expect(await telegram.deliverToWebhook(poison)).toBe(200);
    const letter = JSON.parse((await rig.palaver.store.channelState.get('telegram-bot', `dead-letter:${poison.update_id}`))!);
    expect(letter).toMatchObject({ reason: 'failed', attempts: 3, error: expect.stringMatching(/SyntaxError/), update: { update_id: poison.update_id } });
    expect(logsWith(harness, 'telegram update dropped')).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(0);
  });

  it('registers the webhook with its secret at start when webhookUrl is set', async () => {
    rig = await createTelegramRig(() => ({ text: 'x' }), { webhookUrl: 'https://bot.example/telegram/webhook', webhookSecret: SECRET });
    const { telegram } = rig;
    expect(telegram.webhook).toEqual({ url: 'https://bot.example/telegram/webhook', secretToken: SECRET });
    const call = telegram.callsOf('setWebhook')[0]!;
    expect(call.params['allowed_updates']).toEqual(['message', 'business_connection', 'business_message', 'callback_query']);
    expect(telegram.callsOf('getUpdates')).toHaveLength(0);
  });

  it('refuses a webhook config without a secret at start', async () => {
    rig = await createTelegramRig(() => ({ text: 'x' }), { mode: 'webhook' }, { start: false });
    await expect(rig.start()).rejects.toThrow(/webhookSecret/);
  });
});
