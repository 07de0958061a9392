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
    await fetch(`${telegram.apiRoot}/bot${telegram.token}/setWebhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url, secret_token: SECRET }) });
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

  it('registers the webhook with its secret at start when webhookUrl is set', async () => {
    rig = await createTelegramRig(() => ({ text: 'x' }), { webhookUrl: 'https://bot.example/telegram/webhook', webhookSecret: SECRET });
    const { telegram } = rig;
    expect(telegram.webhook).toEqual({ url: 'https://bot.example/telegram/webhook', secretToken: SECRET });
    const call = telegram.callsOf('setWebhook')[0]!;
    expect(call.params['allowed_updates']).toEqual(['message', 'business_connection', 'business_message']);
    expect(telegram.callsOf('getUpdates')).toHaveLength(0);
  });

  it('refuses a webhook config without a secret at start', async () => {
    rig = await createTelegramRig(() => ({ text: 'x' }), { mode: 'webhook' }, { start: false });
    await expect(rig.start()).rejects.toThrow(/webhookSecret/);
  });
});
