import { afterEach, describe, expect, it } from 'vitest';
import { TelegramBotChannel, type Transcribe } from '../../src/channels/telegram-bot/index.js';
import { startFakeTelegram, type FakeTelegram } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { createTelegramRig, inboxState, userTexts, type TelegramRig } from './telegram-support.js';

let harness: Harness | undefined;
let telegram: FakeTelegram | undefined;
let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
  await harness?.close();
  harness = undefined;
  await telegram?.close();
  telegram = undefined;
});

/** A transcriber handed to the channel directly: a plain multipart POST to the scripted `/v1/audio/transcriptions`. */
function transcriberFor(baseUrl: string): Transcribe {
  return async (audio, { filename, mimeType, language }) => {
    const form = new FormData();
    form.append('file', new File([audio], filename, { type: mimeType }));
    form.append('model', 'whisper-1');
    if (language) form.append('language', language);
    const response = await fetch(`${baseUrl}/audio/transcriptions`, { method: 'POST', body: form });
    if (!response.ok) throw new Error(`transcription answered ${response.status}`);
    return ((await response.json()) as { text: string }).text;
  };
}

async function start(transcribe: boolean): Promise<{ harness: Harness; telegram: FakeTelegram }> {
  harness = await createHarness((call) => ({ text: `heard: ${userTexts(call).at(-1)}` }));
  telegram = await startFakeTelegram();
  const channel = new TelegramBotChannel({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    quietWindowMs: 50,
    drafts: false,
    ...(transcribe ? { transcribe: transcriberFor(harness.model.baseUrl) } : {}),
  });
  await harness.start({ channels: { web: { enabled: false } } }, { channels: [channel] });
  return { harness, telegram };
}

describe('telegram bot: voice messages', () => {
  it("transcribes a voice message through the configured endpoint (the model's by default) and answers it as text", async () => {
    rig = await createTelegramRig((call) => ({ text: `heard: ${userTexts(call).at(-1)}` }), { quietWindowMs: 50 });
    const { harness, telegram } = rig;
    harness.model.setTranscriptionScript((call) => ({ text: call.audio.byteLength === 4 ? 'book me a table for two' : 'unexpected audio' }));
    telegram.sendVoice({ chatId: 60, audio: new Uint8Array([1, 2, 3, 4]), from: { id: 60, first_name: 'Vera', language_code: 'ru' } });
    const [reply] = await telegram.waitForMessages(1, { chatId: 60 });
    expect(reply!.text).toBe('heard: book me a table for two');
    expect(harness.model.transcriptions).toHaveLength(1);
    expect(harness.model.transcriptions[0]).toMatchObject({ model: 'whisper-1', mimeType: 'audio/ogg', filename: 'voice.ogg', language: 'ru' });
    expect(harness.model.transcriptions[0]!.headers['authorization']).toBe(`Bearer ${TEST_SECRETS.modelApiKey}`);
  });

  it('uses channels.telegram.transcription when set', async () => {
    rig = await createTelegramRig((call) => ({ text: `heard: ${userTexts(call).at(-1)}` }), { quietWindowMs: 50 }, { start: false });
    await rig.start({ transcription: { baseUrl: rig.harness.model.baseUrl, model: 'gpt-4o-mini-transcribe' } });
    rig.harness.model.setTranscriptionScript(() => ({ text: 'hello there' }));
    rig.telegram.sendVoice({ chatId: 63, audio: new Uint8Array([7, 7]) });
    const [reply] = await rig.telegram.waitForMessages(1, { chatId: 63 });
    expect(reply!.text).toBe('heard: hello there');
    // Another endpoint than the model's does not get the model's key, nor a made-up one: no key at all.
    expect(rig.harness.model.transcriptions[0]).toMatchObject({ model: 'gpt-4o-mini-transcribe' });
    expect(rig.harness.model.transcriptions[0]!.headers['authorization']).toBeUndefined();
  });

  it('tells the person politely, in their language, when the voice cannot be transcribed, and answers nothing else', async () => {
    const { harness, telegram } = await start(true);
    harness.model.setTranscriptionScript(() => ({ error: { status: 500, message: 'transcriber down' } }));
    telegram.sendVoice({ chatId: 61, audio: new Uint8Array([9]), from: { id: 61, first_name: 'Li', language_code: 'zh-hans' } });
    const [notice] = await telegram.waitForMessages(1, { chatId: 61 });
    expect(notice!.text).toMatch(/^抱歉，我没能听清你的语音消息/);
    // The notice is the handler's last step: the message was not stored, so no turn can start.
    expect(inboxState(harness).received).toBe(0);
    expect(harness.model.calls).toHaveLength(0);
  });

  it('asks for text when no transcriber is configured', async () => {
    const { harness, telegram } = await start(false);
    telegram.sendVoice({ chatId: 62, audio: new Uint8Array([9]) });
    const [notice] = await telegram.waitForMessages(1, { chatId: 62 });
    expect(notice!.text).toMatch(/cannot listen to voice messages/);
    expect(harness.model.calls).toHaveLength(0);
  });
});
