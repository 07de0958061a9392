import type { AudioMedia } from './message-text.js';

/** Turns audio into text (an OpenAI-compatible `/audio/transcriptions` client); throws when it cannot. */
export type Transcribe = (audio: Uint8Array, options: { readonly filename: string; readonly mimeType: string; readonly language?: string }) => Promise<string>;

/** The audio file as the transcriber is told of it. */
export interface AudioFile {
  readonly filename: string;
  readonly mimeType: string;
  /** Bytes, when Telegram said. */
  readonly fileSize: number | undefined;
}

/** The outcome of transcribing one message; a failure names the notice (system text) the person is told. */
export type Transcription =
  | { readonly status: 'transcribed'; readonly text: string }
  /** No transcriber is configured: the person is asked to write. */
  | { readonly status: 'off'; readonly notice: 'telegram.voiceOff' }
  /** Download or transcription failed, or the transcript was empty: the person is asked to try again or write. */
  | { readonly status: 'failed'; readonly notice: 'telegram.voiceFailed'; readonly error: unknown };

export interface TranscribeAudioOptions {
  readonly media: AudioMedia;
  /** The configured transcriber; undefined when transcription is off. */
  readonly transcribe: Transcribe | undefined;
  /** Fetches the file's bytes (each channel its own way: the Bot API's file URL, MTProto's `upload.getFile`). */
  readonly download: () => Promise<Uint8Array>;
  /** The sender's language (`en-US`, `pt_BR`, `uk`): its primary subtag is passed to the transcriber. */
  readonly languageHint?: string | undefined;
  /** A file Telegram reports larger than this is not downloaded (it fails). Default: no limit. */
  readonly maxBytes?: number;
}

/** The name and type a medium's file is sent to the transcriber with (the defaults Telegram's clients record in). */
export function audioFileOf(media: AudioMedia): AudioFile {
  switch (media.kind) {
    case 'voice':
      return { filename: 'voice.ogg', mimeType: media.mimeType ?? 'audio/ogg', fileSize: media.fileSize };
    case 'audio':
      return { filename: media.fileName ?? 'audio.mp3', mimeType: media.mimeType ?? 'audio/mpeg', fileSize: media.fileSize };
    case 'video_note':
      return { filename: 'video.mp4', mimeType: 'video/mp4', fileSize: media.fileSize };
  }
}

/**
 * A voice, audio or round video message as text: checked against `maxBytes`, downloaded, transcribed, trimmed.
 * Never throws: a failure (any error of the download or the transcriber, an empty transcript) comes back as
 * `failed` with the error, for the channel to log and tell the person.
 */
export async function transcribeAudio(options: TranscribeAudioOptions): Promise<Transcription> {
  if (!options.transcribe) return { status: 'off', notice: 'telegram.voiceOff' };
  const file = audioFileOf(options.media);
  try {
    if (file.fileSize !== undefined && options.maxBytes !== undefined && file.fileSize > options.maxBytes) {
      throw new Error(`the audio is ${file.fileSize} bytes; at most ${options.maxBytes} can be downloaded`);
    }
    const bytes = await options.download();
    const language = options.languageHint?.split(/[-_]/)[0];
    const text = (await options.transcribe(bytes, { filename: file.filename, mimeType: file.mimeType, ...(language ? { language } : {}) })).trim();
    if (text === '') throw new Error('the transcript is empty');
    return { status: 'transcribed', text };
  } catch (error) {
    return { status: 'failed', notice: 'telegram.voiceFailed', error };
  }
}
