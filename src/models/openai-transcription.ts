import OpenAI, { toFile } from 'openai';
import { ModelError } from '../domain/errors.js';
import { keyOptions, toModelError } from './openai-client.js';

/** An OpenAI-compatible speech-to-text endpoint (OpenAI, Groq, a local whisper server, LiteLLM, …). */
export interface TranscriberConfig {
  /** E.g. `https://api.openai.com/v1`; `/audio/transcriptions` is appended. */
  readonly baseUrl: string;
  /** Sent as a bearer token; local servers need none. */
  readonly apiKey?: string;
  /** E.g. `whisper-1`, `gpt-4o-mini-transcribe`, `whisper-large-v3`. */
  readonly model: string;
  /** Per attempt. Default 60 000 ms: a long voice message takes a while. */
  readonly timeoutMs?: number;
  /** Attempts after the first on 408, 409, 429, 5xx and connection errors (the SDK's backoff). Default 2. */
  readonly maxRetries?: number;
  /** A `fetch` to use instead of the global one (tests, proxies). */
  readonly fetch?: typeof fetch;
}

export interface TranscribeOptions {
  /** The file name the server sees; its extension tells many servers the format (`voice.ogg`). */
  readonly filename: string;
  /** E.g. `audio/ogg` for Telegram voice messages, `audio/mpeg` for audio files. */
  readonly mimeType: string;
  /**
   * The speaker's language as a hint (better accuracy, less latency). A BCP 47 tag such as `en-US` or Telegram's
   * `pt-br` is sent as its ISO 639-1 part (`en`, `pt`), which is what the endpoint accepts.
   */
  readonly language?: string;
  readonly signal?: AbortSignal;
}

export interface Transcriber {
  /**
   * The audio's text, trimmed (empty when nothing was said). Rejects with a `ModelError` — `unreachable` for
   * timeouts, connection errors, 429 and 5xx after the retries, `refused` for other 4xx — whose message names the
   * model and never holds the API key. A bound function: `transcriber.transcribe` may be passed on as is.
   */
  readonly transcribe: (audio: Uint8Array, options: TranscribeOptions) => Promise<string>;
}

export const DEFAULT_TRANSCRIPTION_TIMEOUT_MS = 60_000;
export const DEFAULT_TRANSCRIPTION_RETRIES = 2;

/**
 * Speech to text over `POST {baseUrl}/audio/transcriptions` (multipart: `file`, `model`, `language`), through the
 * openai SDK, which bounds each attempt by `timeoutMs` and retries with backoff, honouring `retry-after`.
 *
 * @example
 * const { transcribe } = createTranscriber({ baseUrl: 'https://api.openai.com/v1', apiKey, model: 'whisper-1' });
 * const text = await transcribe(oggBytes, { filename: 'voice.ogg', mimeType: 'audio/ogg', language: 'de' });
 */
export function createTranscriber(config: TranscriberConfig): Transcriber {
  const client = new OpenAI({
    baseURL: config.baseUrl,
    ...keyOptions(config.apiKey),
    // Config is the only source of truth: nothing from OPENAI_* environment variables.
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    timeout: config.timeoutMs ?? DEFAULT_TRANSCRIPTION_TIMEOUT_MS,
    maxRetries: config.maxRetries ?? DEFAULT_TRANSCRIPTION_RETRIES,
    ...(config.fetch ? { fetch: config.fetch } : {}),
  });
  const model = config.model;

  const transcribe = async (audio: Uint8Array, options: TranscribeOptions): Promise<string> => {
    if (audio.byteLength === 0) {
      throw new ModelError('invalid_output', model, `Transcription model ${model}: the audio file ${options.filename} is empty.`);
    }
    const language = languageHint(options.language);
    let result: unknown;
    try {
      const file = await toFile(audio, options.filename, { type: options.mimeType });
      result = await client.audio.transcriptions.create(
        { file, model, response_format: 'json', ...(language ? { language } : {}) },
        options.signal ? { signal: options.signal } : {},
      );
    } catch (error) {
      throw transcriptionError(error, model, config.apiKey);
    }
    const text = transcriptText(result);
    if (text === undefined) {
      throw new ModelError(
        'invalid_output',
        model,
        `Transcription model ${model} answered without a text field; check transcription.baseUrl points at an OpenAI-compatible /audio/transcriptions.`,
      );
    }
    return text.trim();
  };
  return { transcribe };
}

/** `en-US` → `en`, `pt_br` → `pt`; anything that is not a language tag is not sent. */
function languageHint(language: string | undefined): string | undefined {
  const primary = language?.trim().split(/[-_]/)[0]?.toLowerCase();
  return primary && /^[a-z]{2,3}$/.test(primary) ? primary : undefined;
}

/** The SDK types the JSON answer as `{ text }`; a plain-text answer (some servers ignore response_format) is a string. */
function transcriptText(result: unknown): string | undefined {
  if (typeof result === 'string') return result;
  if (result && typeof result === 'object' && 'text' in result && typeof result.text === 'string') return result.text;
  return undefined;
}

/** toModelError's hints name the chat model's settings; here they are the transcription endpoint's. */
const HINTS: readonly (readonly [string, string])[] = [
  ['model.apiKey', 'the transcription apiKey'],
  ['model.baseUrl', 'the transcription baseUrl'],
  ['model.name', 'the transcription model name'],
  ['model.timeoutMs', 'the transcription timeout'],
];

/** `toModelError`'s mapping, with messages that say this was a transcription. */
function transcriptionError(error: unknown, model: string, apiKey: string | undefined): ModelError {
  const mapped = toModelError(error, model, apiKey);
  let message = mapped.message.replace(/^Model /, 'Transcription model ');
  for (const [setting, words] of HINTS) message = message.replaceAll(setting, words);
  return new ModelError(mapped.failure, model, message, { status: mapped.status, cause: mapped.cause ?? error });
}
