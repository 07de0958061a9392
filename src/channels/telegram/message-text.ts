import { describeMedia, type TelegramMedia } from './media.js';

/** A message as the shared reader takes it; each channel maps its own messages (Bot API, MTProto) to this. */
export interface TelegramContent {
  /** The message's text; undefined for a media message. */
  readonly text?: string;
  /** The caption of a media message. */
  readonly caption?: string;
  readonly media?: TelegramMedia;
}

/** Media that can be transcribed: voice, audio and round video messages. */
export type AudioMedia = Extract<TelegramMedia, { readonly kind: 'voice' | 'audio' | 'video_note' }>;

/** What a message says to the model, before any audio in it is transcribed. */
export interface MessageText {
  /** The text, a caption after its media's description (`[photo] caption`), or `AUDIO_PLACEHOLDER` for audio. */
  readonly text: string;
  /** The sender's own phone number, when they shared their own contact (a phone Telegram vouches for). */
  readonly phone?: string;
  /** Audio to transcribe; its transcript replaces `AUDIO_PLACEHOLDER` in `text` (`withTranscript`). */
  readonly audio?: AudioMedia;
}

/** Where a transcript goes in `MessageText.text`. */
export const AUDIO_PLACEHOLDER = '\u0000audio\u0000';

/** A quote longer than this is cut (with `…`): the model needs to know what is answered, not all of it. */
const MAX_QUOTE_CHARS = 1_000;

/**
 * The text a message becomes: its text as it is; the media kinds in `transcribed` as `AUDIO_PLACEHOLDER` (with the
 * caption after a blank line) and the medium in `audio`; the sender's own contact as `[contact: name, phone]` with
 * the phone in `phone` (a friend's card is only shown); any other medium described (`describeMedia`), its caption
 * after it. Undefined for a message with neither text nor media (a service message: nothing to answer).
 */
export function describeContent(content: TelegramContent, options: { readonly transcribed: readonly AudioMedia['kind'][] }): MessageText | undefined {
  if (content.text !== undefined) return { text: content.text };
  const media = content.media;
  if (media === undefined) return undefined;
  const caption = content.caption ? ` ${content.caption}` : '';
  if (isAudio(media) && options.transcribed.includes(media.kind)) {
    return { text: `${AUDIO_PLACEHOLDER}${caption ? `\n\n${caption.trim()}` : ''}`, audio: media };
  }
  if (media.kind === 'contact') {
    const name = [media.firstName, media.lastName].filter(Boolean).join(' ');
    return { text: `[contact: ${name}, ${media.phone}]`, ...(media.isSender ? { phone: media.phone } : {}) };
  }
  return { text: `${describeMedia(media)}${caption}` };
}

/** What a reply to this message quotes of it: its text, else its media's description and caption. */
export function quotedText(replied: TelegramContent): string | undefined {
  const media = replied.media === undefined ? undefined : describeMedia(replied.media);
  return replied.text ?? (replied.caption ? `${media ?? ''} ${replied.caption}`.trim() : media);
}

/**
 * The text of a reply with what it quotes in front, as `> ` lines and a blank line (the quote cut at 1000
 * characters); the body alone when nothing (or an empty string) is quoted.
 */
export function withQuote(quoted: string | undefined, body: string): string {
  if (!quoted) return body;
  const cut = quoted.length > MAX_QUOTE_CHARS ? `${quoted.slice(0, MAX_QUOTE_CHARS)}…` : quoted;
  const lines = cut
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `${lines}\n\n${body}`;
}

/** The text with the transcript in place of `AUDIO_PLACEHOLDER`. */
export function withTranscript(text: string, transcript: string): string {
  // A function, so a `$&` the speaker dictated is not read as a replacement pattern.
  return text.replace(AUDIO_PLACEHOLDER, () => transcript);
}

function isAudio(media: TelegramMedia): media is AudioMedia {
  return media.kind === 'voice' || media.kind === 'audio' || media.kind === 'video_note';
}
