import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PalaverOptions } from '../../../src/app.js';
import {
  FakeMtproto,
  fakeMtprotoLink,
  remoteFakeMtprotoLink,
  serveFakeMtproto,
  signInSessionFile,
  type FakeMtprotoServer,
} from '../../../src/testing/fake-mtproto/index.js';
import { createHarness, userTexts, type Harness } from '../../support/palaver-harness.js';

// channels.telegramUser as a team configures it: the channel built by createPalaver, reaching the fake over loopback.
let harness: Harness | undefined;
let server: FakeMtproto | undefined;
let served: FakeMtprotoServer | undefined;
afterEach(async () => {
  await harness?.close();
  await served?.close();
  harness = server = served = undefined;
});

async function setUp(): Promise<{
  harness: Harness;
  telegram: FakeMtproto;
  config: (sessionFile: string) => Record<string, unknown>;
  options: PalaverOptions;
}> {
  harness = await createHarness((call) => ({ text: `ok: ${userTexts(call).at(-1)}` }));
  server = new FakeMtproto();
  served = await serveFakeMtproto(server);
  const url = served.url;
  mkdirSync(join(harness.dir, 'data'), { recursive: true, mode: 0o700 });
  return {
    harness,
    telegram: server,
    config: (sessionFile) => ({
      channels: { web: { enabled: false }, telegramUser: { apiId: 12345, apiHash: '0123456789abcdef0123456789abcdef', sessionFile, quietWindowMs: 0 } },
    }),
    options: { telegramUserNetwork: remoteFakeMtprotoLink(url) },
  };
}

describe('channels.telegramUser', () => {
  it('refuses to start without a signed-in session, naming the login command, before any network', async () => {
    const { harness, telegram, config, options } = await setUp();
    await expect(harness.start(config(join(harness.dir, 'data', 'telegram-user.session')), options)).rejects.toThrow(/palaver telegram login/);
    expect(telegram.calls).toEqual([]);
  });

  it('runs signed in: answers through the fake, reports connected in /health and in the gauge, signed_out when revoked', async () => {
    const { harness, telegram, config, options } = await setUp();
    const sessionFile = join(harness.dir, 'data', 'telegram-user.session');
    await signInSessionFile(fakeMtprotoLink(telegram), sessionFile);
    const palaver = await harness.start(config(sessionFile), options);
    const ann = telegram.addUser({ firstName: 'Ann' });
    telegram.incoming(ann.id, 'hello');
    const [reply] = await telegram.waitForSent(1, { chatId: ann.id });
    expect(reply!.text).toBe('ok: hello');
    expect((await palaver.health())['telegram-user']).toEqual({ ok: true, detail: 'connected' });
    const metrics = await palaver.metrics.registry.metrics();
    expect(metrics).toContain('palaver_telegram_user_connection{state="connected"} 1');
    expect(metrics).toContain('palaver_telegram_user_connection{state="signed_out"} 0');

    telegram.revokeSession('AUTH_KEY_UNREGISTERED');
    telegram.incoming(ann.id, 'are you there?');
    telegram.dropConnection();
    telegram.restoreConnection();
    await expect
      .poll(async () => (await palaver.health())['telegram-user'], { timeout: 15_000 })
      .toEqual({ ok: false, detail: 'signed_out: AUTH_KEY_UNREGISTERED' });
    const after = await palaver.metrics.registry.metrics();
    expect(after).toContain('palaver_telegram_user_connection{state="signed_out"} 1');
    expect(after).toContain('palaver_telegram_user_signed_out_total{error="AUTH_KEY_UNREGISTERED"} 1');
    // Nothing else stopped: the API channel still answers.
    expect((await palaver.chat({ userId: 'api-user', text: 'still up?' })).text).toBe('ok: still up?');
  }, 40_000);
});
