import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TelegramNetworkOverride } from '../../../src/channels/telegram-user/client-factory.js';
import { TelegramUserChannel } from '../../../src/channels/telegram-user/telegram-user-channel.js';
import { createLogger } from '../../../src/observability/logger.js';
import { FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';
import { createHarness, userTexts, type Harness } from '../../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('telegram user account start', () => {
  // A new session learns where Telegram's updates stand during its first catch-up. Were the channel started before
  // that, a message arriving in between would be counted as already seen and never answered. mtcute also says
  // "connected" when its network becomes usable, which a slow connect can make happen mid catch-up.
  it('is started only once caught up, also when the network came up mid catch-up, so a message sent right after is answered', async () => {
    harness = await createHarness((call) => ({ text: `You said: ${userTexts(call).at(-1)}` }));
    const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
    const ann = telegram.addUser({ firstName: 'Ann' });
    const link = fakeMtprotoLink(telegram);
    let networkUp!: () => void;
    const whenNetworkUp = new Promise<void>((resolve) => (networkUp = resolve));
    const states: string[] = [];
    const network: TelegramNetworkOverride = {
      ...link,
      // Calls go through at once (the fake answers them); the connection is usable only when the test says so.
      transport: { ...link.transport, connect: async (...args) => whenNetworkUp.then(() => link.transport.connect(...args)) },
      attach(client) {
        client.onConnectionState.add((state) => states.push(state));
        return link.attach(client);
      },
    };
    const slowState = telegram.delayNext('updates.getState');
    const channel = new TelegramUserChannel({
      apiId: 1,
      apiHash: 'fake',
      session: join(harness.dir, 'data', 'telegram-user.session'),
      network,
      quietWindowMs: 0,
      mtcuteLogLevel: 0,
      logger: createLogger({ level: 'silent' }),
    });
    let started = false;
    const starting = harness.start({ channels: { web: { enabled: false } } }, { channels: [channel] }).then(() => (started = true));

    await slowState.reached;
    networkUp();
    // The network's "connected" came while the catch-up still waits for Telegram's answer.
    await expect.poll(() => states.slice(states.indexOf('updating'))).toContain('connected');
    expect(started).toBe(false);

    slowState.release();
    await starting;
    telegram.incoming(ann.id, 'book a table');
    const [reply] = await telegram.waitForSent(1, { chatId: ann.id, timeoutMs: 10_000 });
    expect(reply!.text).toBe('You said: book a table');
  });
});
