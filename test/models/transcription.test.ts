import { afterEach, describe, expect, it } from 'vitest';
import { ModelError } from '../../src/domain/errors.js';
import { createTranscriber } from '../../src/models/openai-transcription.js';
import { startScriptedModelServer, textScript, type ScriptedModelServer } from '../../src/testing/index.js';
import type { TranscriptionScript } from '../../src/models/scripted/scripted-model-server.js';

const API_KEY = 'sk-transcription-test-4f9a2c7e1b';
const AUDIO = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0x00, 0x02, 0xff, 0x10]);
const VOICE = { filename: 'voice.ogg', mimeType: 'audio/ogg' } as const;

let server: ScriptedModelServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(transcription: TranscriptionScript, apiKey?: string): Promise<ScriptedModelServer> {
  server = await startScriptedModelServer({ script: textScript('unused'), transcription, ...(apiKey ? { apiKey } : {}) });
  return server;
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe('createTranscriber over real HTTP', () => {
  it('sends the file, model and language and returns the text', async () => {
    const { baseUrl, transcriptions } = await start(() => ({ text: '  Hello from a voice message.\n' }));
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', maxRetries: 0 });

    expect(await transcribe(AUDIO, { ...VOICE, language: 'de' })).toBe('Hello from a voice message.');

    expect(transcriptions).toHaveLength(1);
    const [call] = transcriptions;
    expect(call).toMatchObject({ model: 'whisper-1', filename: 'voice.ogg', mimeType: 'audio/ogg', language: 'de' });
    expect([...(call?.audio ?? [])]).toEqual([...AUDIO]);
    expect(call?.headers['authorization']).toBe(`Bearer ${API_KEY}`);
  });

  it('sends a region-tagged language as its ISO 639-1 part, and no language when none is given', async () => {
    const { baseUrl, transcriptions } = await start((call) => ({ text: `lang=${call.language ?? 'none'}` }));
    const { transcribe } = createTranscriber({ baseUrl, model: 'gpt-4o-mini-transcribe', maxRetries: 0 });

    expect(await transcribe(AUDIO, { ...VOICE, language: 'pt-br' })).toBe('lang=pt');
    expect(await transcribe(AUDIO, { ...VOICE, language: 'en_US' })).toBe('lang=en');
    expect(await transcribe(AUDIO, VOICE)).toBe('lang=none');
    expect(await transcribe(AUDIO, { ...VOICE, language: '' })).toBe('lang=none');
    expect(transcriptions.map((call) => call.model)).toEqual(Array(4).fill('gpt-4o-mini-transcribe'));
  });

  it('works without an API key (local servers) and sends no secret of its own', async () => {
    const { baseUrl, transcriptions } = await start(() => ({ text: 'ok' }));
    const { transcribe } = createTranscriber({ baseUrl, model: 'whisper-large-v3', maxRetries: 0 });
    expect(await transcribe(AUDIO, { filename: 'song.mp3', mimeType: 'audio/mpeg' })).toBe('ok');
    expect(transcriptions[0]).toMatchObject({ filename: 'song.mp3', mimeType: 'audio/mpeg' });
  });

  it('turns a wrong API key (the server echoes it) into a refused ModelError without the key', async () => {
    const { baseUrl } = await start(() => ({ text: 'never' }), 'sk-the-right-key-0000');
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', maxRetries: 0 });

    const error = await failure(transcribe(AUDIO, VOICE));
    expect(error.failure).toBe('refused');
    expect(error.status).toBe(401);
    expect(error.model).toBe('whisper-1');
    expect(error.message).toMatch(/^Transcription model whisper-1 refused the request/);
    expect(error.message).toContain('Check the transcription apiKey.');
    expect(error.message).not.toContain(API_KEY);
    expect(error.message).toContain('[redacted]');
  });

  it('turns a 4xx into a refused ModelError with the server message', async () => {
    const { baseUrl, transcriptions } = await start(() => ({ error: { status: 400, message: 'Audio file might be corrupted or unsupported' } }));
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', maxRetries: 2 });

    const error = await failure(transcribe(AUDIO, VOICE));
    expect(error).toMatchObject({ failure: 'refused', status: 400, retryable: false });
    expect(error.message).toContain('Audio file might be corrupted or unsupported');
    expect(transcriptions).toHaveLength(1);
  });

  it('retries a 5xx a bounded number of times, then fails as unreachable', async () => {
    const { baseUrl, transcriptions } = await start(() => ({ error: { status: 503, message: 'overloaded', retryAfterMs: 1 } }));
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', maxRetries: 2 });

    const error = await failure(transcribe(AUDIO, VOICE));
    expect(error).toMatchObject({ failure: 'unreachable', status: 503, retryable: true });
    expect(error.message).toContain('Transcription model whisper-1 is unavailable');
    expect(transcriptions).toHaveLength(3);
  });

  it('succeeds when a retry does', async () => {
    let attempts = 0;
    const { baseUrl } = await start(() => {
      attempts += 1;
      return attempts === 1 ? { error: { status: 429, message: 'slow down', retryAfterMs: 1 } } : { text: 'second time lucky' };
    });
    const { transcribe } = createTranscriber({ baseUrl, model: 'whisper-1', maxRetries: 1 });
    expect(await transcribe(AUDIO, VOICE)).toBe('second time lucky');
    expect(attempts).toBe(2);
  });

  it('fails cleanly on a timeout', async () => {
    const { baseUrl } = await start(async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return { text: 'too late' };
    });
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', timeoutMs: 150, maxRetries: 0 });

    const started = Date.now();
    const error = await failure(transcribe(AUDIO, VOICE));
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(error).toMatchObject({ failure: 'unreachable', retryable: true });
    expect(error.message).toBe("Transcription model whisper-1 did not answer in time; raise the transcription timeout or check the endpoint's load.");
  });

  it('stops when the caller aborts', async () => {
    const { baseUrl } = await start(async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return { text: 'too late' };
    });
    const { transcribe } = createTranscriber({ baseUrl, model: 'whisper-1', maxRetries: 0 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await failure(transcribe(AUDIO, { ...VOICE, signal: controller.signal }));
    expect(error.message).toContain('aborted');
  });

  it('fails as unreachable when nothing listens, naming no key', async () => {
    const { baseUrl } = await start(() => ({ text: 'x' }));
    await server?.close();
    const { transcribe } = createTranscriber({ baseUrl, apiKey: API_KEY, model: 'whisper-1', maxRetries: 0 });
    const error = await failure(transcribe(AUDIO, VOICE));
    expect(error.failure).toBe('unreachable');
    expect(error.message).toContain('could not be reached');
    expect(error.message).toContain('the transcription baseUrl');
    expect(error.message).not.toContain(API_KEY);
  });

  it('refuses empty audio without a request', async () => {
    const { baseUrl, transcriptions } = await start(() => ({ text: 'x' }));
    const { transcribe } = createTranscriber({ baseUrl, model: 'whisper-1', maxRetries: 0 });
    const error = await failure(transcribe(new Uint8Array(), VOICE));
    expect(error.message).toContain('voice.ogg is empty');
    expect(transcriptions).toHaveLength(0);
  });
});
