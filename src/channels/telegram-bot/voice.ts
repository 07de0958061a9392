import type { Api } from 'grammy';
import type { Logger } from '../../observability/logger.js';
import { transcribeAudio, type AudioMedia, type Transcribe } from '../telegram/index.js';
import type { ChatAddress } from './address.js';
import type { Notices, Person } from './notices.js';

/** The Bot API refuses to hand out files larger than this. */
const MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;

export interface BotVoiceOptions {
  readonly api: Api;
  readonly token: string;
  /** Bot API root; files are downloaded from `<root>/file/bot<token>/<path>`. */
  readonly apiRoot: string;
  /** Undefined when transcription is off: people are asked to write instead. */
  readonly transcribe: Transcribe | undefined;
  readonly notices: Notices;
  readonly logger: Logger;
  /** What the file is downloaded with (the channel's `fetch`). */
  readonly fetch: typeof fetch;
}

/**
 * Voice and audio messages as text: the file downloaded through the Bot API (at most its 20 MB), transcribed with
 * the configured transcriber (`transcribeAudio` in `../telegram/`). When that cannot be done the person is told in
 * their language, and the message is not answered otherwise.
 */
export class BotVoice {
  readonly #options: BotVoiceOptions;

  constructor(options: BotVoiceOptions) {
    this.#options = options;
  }

  /** The transcript, or undefined after telling the person it could not be heard. */
  async transcribe(audio: { readonly fileId: string; readonly media: AudioMedia }, address: ChatAddress, person: Person): Promise<string | undefined> {
    const result = await transcribeAudio({
      media: audio.media,
      transcribe: this.#options.transcribe,
      download: () => this.#download(audio.fileId),
      languageHint: person.hint,
      maxBytes: MAX_DOWNLOAD_BYTES,
    });
    if (result.status === 'transcribed') return result.text;
    if (result.status === 'failed')
      this.#options.logger.warn(
        { err: result.error, chatId: address.chatId },
        'telegram voice message could not be transcribed; the person was asked to write',
      );
    await this.#options.notices.tell(address, person, result.notice);
    return undefined;
  }

  async #download(fileId: string): Promise<Uint8Array> {
    const file = await this.#options.api.getFile(fileId);
    if (!file.file_path) throw new Error('Telegram gave no file_path for the audio');
    const root = this.#options.apiRoot.replace(/\/+$/, '');
    const response = await this.#options.fetch(`${root}/file/bot${this.#options.token}/${file.file_path}`, { signal: AbortSignal.timeout(60_000) });
    if (!response.ok) throw new Error(`downloading the audio answered HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
}
