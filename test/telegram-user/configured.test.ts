import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FakeMtproto,
  fakeMtprotoLink,
  remoteFakeMtprotoLink,
  serveFakeMtproto,
  signInSessionFile,
  type FakeMtprotoServer,
} from '../../src/testing/fake-mtproto/index.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { voiceMedia } from './tl-messages.js';

// The inbound settings of channels.telegramUser as a team writes them, through createPalaver and the fake over loopback.
let harness: Harness | undefined;
let served: FakeMtprotoServer | undefined;
afterEach(async () => {
  await harness?.close();
  await served?.close();
  harness = served = undefined;
});

describe('channels.telegramUser: who is answered, transcription and owner takeover from the config', () => {
  it('answers contacts only, transcribes with the transcription settings, and counts an owner takeover in /metrics', async () => {
    harness = await createHarness((call) => ({ text: `ok: ${userTexts(call).at(-1)}` }));
    harness.model.setTranscriptionScript(() => ({ text: 'a table for two' }));
    const telegram = new FakeMtproto();
    served = await serveFakeMtproto(telegram);
    mkdirSync(join(harness.dir, 'data'), { recursive: true, mode: 0o700 });
    const sessionFile = join(harness.dir, 'data', 'telegram-user.session');
    await signInSessionFile(fakeMtprotoLink(telegram), sessionFile);
    const palaver = await harness.start(
      {
        channels: {
          web: { enabled: false },
          telegramUser: {
            apiId: 12345,
            apiHash: '0123456789abcdef0123456789abcdef',
            sessionFile,
            quietWindowMs: 0,
            answer: 'contacts',
            ownerTakeoverMinutes: 30,
            transcription: { baseUrl: harness.model.baseUrl, model: 'gpt-4o-mini-transcribe' },
          },
        },
      },
      { telegramUserNetwork: remoteFakeMtprotoLink(served.url) },
    );
    telegram.on('upload.getFile', () => ({ _: 'upload.file', type: { _: 'storage.fileUnknown' }, mtime: 0, bytes: new Uint8Array([1, 2, 3, 4]) }));
    const stranger = telegram.addUser({ firstName: 'Stranger' });
    const friend = telegram.addUser({ firstName: 'Friend', contact: true });
    telegram.incoming(stranger.id, 'hi, who is this?');
    telegram.incoming(friend.id, { media: voiceMedia(4) });
    const [reply] = await telegram.waitForSent(1, { chatId: friend.id });
    expect(reply!.text).toBe('ok: a table for two');
    expect(harness.model.transcriptions[0]).toMatchObject({ model: 'gpt-4o-mini-transcribe', filename: 'voice.ogg' });
    telegram.ownerWrites(friend.id, 'I will take it from here.');
    await expect.poll(async () => palaver.metrics.registry.metrics(), { timeout: 15_000 }).toMatch(/^palaver_telegram_user_owner_takeovers_total 1$/m);
    expect(await palaver.metrics.registry.metrics()).toMatch(/^palaver_telegram_user_taken_over_chats 1$/m);
    telegram.incoming(friend.id, 'great, thanks');
    // The held message is stored without a turn (logged), and nothing more was sent anywhere.
    const held = () => harness!.logs.filter((l) => String(l['msg']).includes('the owner has taken this chat over'));
    await expect.poll(() => held().length, { timeout: 15_000 }).toBe(1);
    expect(telegram.sent().map((m) => [m.chatId, m.text])).toEqual([[friend.id, 'ok: a table for two']]);
    // The stranger's message was neither answered nor stored.
    expect(await palaver.store.sessions.findByConversation('telegram-user', String(stranger.id))).toBeUndefined();
  }, 40_000);
});
