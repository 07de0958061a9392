import type { FileDownloadLocation, Message, MessageMedia } from '@mtcute/core';
import { describeContent, quotedText, withQuote, type AudioMedia, type TelegramContent, type TelegramMedia } from '../telegram/index.js';

/** What an MTProto message says to the model, before any speech in it is transcribed. */
export interface ReadMessage {
  /** The text for the model: the text or caption, media described by type, a quoted reply in front. */
  readonly text: string;
  /** The sender's own phone number, when they shared their own contact (Telegram vouches for it). */
  readonly phone?: string;
  /** Speech to transcribe (voice, audio file, round video); its transcript takes the place of `AUDIO_PLACEHOLDER`. */
  readonly audio?: { readonly media: AudioMedia; readonly location: FileDownloadLocation };
}

/** The client call reading needs: the replied-to message (for the quote). */
export interface ReplySource {
  getReplyTo(message: Message): Promise<Message | null>;
}

/** Voice, audio files and round videos are all transcribed, as in the bot channel. */
const TRANSCRIBED: readonly AudioMedia['kind'][] = ['voice', 'audio', 'video_note'];
/** The longest the update loop waits for the replied-to message; past it the message is read without the quote. */
const QUOTE_FETCH_TIMEOUT_MS = 10_000;

/**
 * Reads a message as text for the model, with the reader the bot channel uses (src/channels/telegram/): a caption
 * follows its media's description (`[photo] caption`), a reply carries the quoted text first (`> …` lines), voice,
 * audio and round video wait for their transcript, a contact card of the sender themselves hands over their phone.
 * Returns undefined for a message with nothing to read (a service message, an empty or unsupported one).
 *
 * `replies` fetches the message a reply answers (MTProto sends only its id); without it, or when that fails, only a
 * part the person selected to quote is shown.
 */
export async function readMessage(message: Message, replies?: ReplySource, onQuoteError?: (error: unknown) => void): Promise<ReadMessage | undefined> {
  const body = readBody(message);
  if (body === undefined) return undefined;
  const quoted = await quoteOf(message, replies).catch((error: unknown) => {
    onQuoteError?.(error);
    return undefined;
  });
  return { ...body, text: withQuote(quoted, body.text) };
}

/** The message itself, without the quote. */
export function readBody(message: Message): ReadMessage | undefined {
  if (message.isService) return undefined;
  const content = contentOf(message);
  const read = describeContent(content, { transcribed: TRANSCRIBED });
  if (read === undefined || read.text.trim() === '') return undefined;
  const location = message.media;
  return {
    text: read.text,
    ...(read.phone ? { phone: read.phone } : {}),
    ...(read.audio && isDownloadable(location) ? { audio: { media: read.audio, location } } : {}),
  };
}

/** An mtcute message as the shared reader takes it: MTProto keeps text and caption in one field. */
export function contentOf(message: Message): TelegramContent {
  const media = mediaOf(message.media, message);
  if (media === undefined) return { text: message.text };
  return { media, ...(message.text === '' ? {} : { caption: message.text }) };
}

/** MTProto media in the shared shape; undefined for a link preview (the link is in the text) and media not described. */
function mediaOf(media: MessageMedia, message: Message): TelegramMedia | undefined {
  if (media === null) return undefined;
  switch (media.type) {
    case 'photo':
      return { kind: 'photo' };
    case 'sticker':
      return { kind: 'sticker', ...(media.emoji ? { emoji: media.emoji } : {}) };
    case 'video':
      if (media.isRound) return { kind: 'video_note', ...sizeOf(media.fileSize) };
      if (media.isAnimation || media.isLegacyGif) return { kind: 'animation' };
      return { kind: 'video' };
    case 'document':
      return { kind: 'document', ...(media.fileName ? { fileName: media.fileName } : {}) };
    case 'voice':
      return { kind: 'voice', ...(media.mimeType ? { mimeType: media.mimeType } : {}), ...sizeOf(media.fileSize) };
    case 'audio':
      return {
        kind: 'audio',
        ...(media.title ? { title: media.title } : {}),
        ...(media.fileName ? { fileName: media.fileName } : {}),
        ...(media.mimeType ? { mimeType: media.mimeType } : {}),
        ...sizeOf(media.fileSize),
      };
    case 'venue':
      return { kind: 'venue', title: media.title, address: media.address };
    case 'location':
    case 'live_location':
      return { kind: 'location', latitude: media.latitude, longitude: media.longitude };
    case 'poll':
      return { kind: 'poll', question: media.question };
    case 'dice':
      return { kind: 'dice', emoji: media.emoji, value: media.value };
    case 'contact': {
      // Only the sender's own card is their phone; a friend's card is just something they showed.
      const sender = message.sender;
      const isSender = media.userId !== 0 && sender.type === 'user' && media.userId === sender.id;
      return { kind: 'contact', firstName: media.firstName, ...(media.lastName ? { lastName: media.lastName } : {}), phone: media.phoneNumber, isSender };
    }
    case 'game':
      return { kind: 'game', title: media.title };
    case 'story':
      return { kind: 'story' };
    case 'paid':
      return { kind: 'paid_media' };
    default:
      return undefined;
  }
}

function sizeOf(fileSize: number | undefined): { fileSize?: number } {
  return typeof fileSize === 'number' ? { fileSize } : {};
}

function isDownloadable(media: MessageMedia): media is Extract<MessageMedia, { type: 'voice' | 'audio' | 'video' }> {
  return media !== null && (media.type === 'voice' || media.type === 'audio' || media.type === 'video');
}

/** The text a reply quotes: the part the person selected, else the whole replied-to message. */
async function quoteOf(message: Message, replies: ReplySource | undefined): Promise<string | undefined> {
  const reply = message.replyToMessage;
  if (reply === null) return undefined;
  if (reply.isQuote && reply.quoteText) return reply.quoteText;
  if (reply.id === null || !replies) return undefined;
  const replied = await withTimeout(replies.getReplyTo(message), QUOTE_FETCH_TIMEOUT_MS);
  return replied ? quotedText(contentOf(replied)) : undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
