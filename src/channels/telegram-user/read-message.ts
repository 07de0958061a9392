import type { FileDownloadLocation, Message, MessageMedia } from '@mtcute/core';
import type { Message as BotApiMessage } from 'grammy/types';
// The bot's wording for media, shared so both channels describe a photo alike. The lead re-points this at the shared
// src/channels/telegram/ module once it exists.
import { describeMedia as describeBotApiMedia } from '../telegram-bot/inbound.js';

/** What an MTProto message says to the model, before any voice is transcribed. */
export interface ReadMessage {
  /** The text for the model: the text or caption, media described by type, a quoted reply in front. */
  readonly text: string;
  /** The sender's own phone number, when they shared their own contact (Telegram vouches for it). */
  readonly phone?: string;
  /** Speech to transcribe (voice, audio file, round video); its transcript takes the place of `AUDIO_PLACEHOLDER`. */
  readonly audio?: AudioToTranscribe;
}

export interface AudioToTranscribe {
  /** What the client downloads (the document itself). */
  readonly location: FileDownloadLocation;
  readonly fileSize: number | undefined;
  readonly mimeType: string;
  /** The file name the transcription endpoint sees; its extension names the format. */
  readonly filename: string;
  /** How the message reads when the speech cannot be transcribed: `[voice message]`, `[video message]`. */
  readonly description: string;
}

/** Where a transcript goes in `ReadMessage.text`. */
export const AUDIO_PLACEHOLDER = '\u0000audio\u0000';

/** The client calls reading needs: the replied-to message (for the quote). */
export interface ReplySource {
  getReplyTo(message: Message): Promise<Message | null>;
}

const MAX_QUOTE_CHARS = 1_000;
/** The longest the update loop waits for the replied-to message; past it the message is read without the quote. */
const QUOTE_FETCH_TIMEOUT_MS = 10_000;

/**
 * Reads a message as text for the model, as the bot channel reads a Bot API message: a caption follows its media's
 * description (`[photo] caption`), a reply carries the quoted text first (`> …` lines), voice, audio and round
 * video wait for their transcript, a contact card of the sender themselves hands over their phone. Returns
 * undefined for a message with nothing to read (a service message, an empty or unsupported one).
 *
 * `replies` fetches the message a reply answers (MTProto sends only its id); without it, or when that fails, only a
 * partial quote the person selected is shown.
 */
export async function readMessage(message: Message, replies?: ReplySource, onQuoteError?: (error: unknown) => void): Promise<ReadMessage | undefined> {
  const body = readBody(message);
  if (body === undefined) return undefined;
  const quoted = await quoteOf(message, replies).catch((error: unknown) => {
    onQuoteError?.(error);
    return undefined;
  });
  return quoted ? { ...body, text: `${quoted}\n\n${body.text}` } : body;
}

/** The message itself, without the quote. */
export function readBody(message: Message): ReadMessage | undefined {
  if (message.isService) return undefined;
  const text = message.text;
  const media = message.media;
  if (media === null || media.type === 'webpage') return text.trim() === '' ? undefined : { text };
  const caption = text === '' ? '' : ` ${text}`;
  const audio = audioOf(media);
  if (audio) return { text: `${AUDIO_PLACEHOLDER}${caption ? `\n\n${caption.trim()}` : ''}`, audio };
  if (media.type === 'contact') {
    const name = [media.firstName, media.lastName].filter(Boolean).join(' ');
    // Only the sender's own card is their phone; a friend's card is just something they showed.
    const own = media.userId !== 0 && media.userId === senderId(message);
    return { text: `[contact: ${name}, ${media.phoneNumber}]`, ...(own ? { phone: media.phoneNumber } : {}) };
  }
  const described = describeMedia(media);
  if (described === undefined) return text.trim() === '' ? undefined : { text };
  return { text: `${described}${caption}` };
}

/** `[photo]`, `[sticker 😀]`, `[document: report.pdf]`… in the bot channel's words; undefined for other media. */
export function describeMedia(media: MessageMedia): string | undefined {
  if (media === null) return undefined;
  return describeBotApiMedia(botApiShape(media));
}

/** The speech in a voice message, an audio file or a round video; none for other media. */
function audioOf(media: NonNullable<MessageMedia>): AudioToTranscribe | undefined {
  if (media.type === 'voice') {
    return { location: media, fileSize: media.fileSize, mimeType: media.mimeType || 'audio/ogg', filename: 'voice.ogg', description: '[voice message]' };
  }
  if (media.type === 'audio') {
    return { location: media, fileSize: media.fileSize, mimeType: media.mimeType || 'audio/mpeg', filename: media.fileName ?? 'audio.mp3', description: describeMedia(media) ?? '[audio]' };
  }
  if (media.type === 'video' && media.isRound) {
    return { location: media, fileSize: media.fileSize, mimeType: media.mimeType || 'video/mp4', filename: 'video.mp4', description: '[video message]' };
  }
  return undefined;
}

function senderId(message: Message): number | undefined {
  const sender = message.sender;
  return sender.type === 'user' ? sender.id : undefined;
}

/** The text a reply quotes, as `> ` lines: the part the person selected, else the whole replied-to message. */
async function quoteOf(message: Message, replies: ReplySource | undefined): Promise<string | undefined> {
  const reply = message.replyToMessage;
  if (reply === null) return undefined;
  let quoted: string | undefined;
  if (reply.isQuote && reply.quoteText) quoted = reply.quoteText;
  else if (reply.id !== null && replies) {
    const replied = await withTimeout(replies.getReplyTo(message), QUOTE_FETCH_TIMEOUT_MS);
    if (replied) {
      const media = replied.media === null ? undefined : describeMedia(replied.media);
      quoted = media ? `${media} ${replied.text}`.trim() : replied.text;
    }
  }
  if (!quoted) return undefined;
  const cut = quoted.length > MAX_QUOTE_CHARS ? `${quoted.slice(0, MAX_QUOTE_CHARS)}…` : quoted;
  return cut
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The fields of a Bot API message the bot's `describeMedia` reads, filled from MTProto media: the two APIs name
 * the same media differently (a GIF is a video with the animation flag, a round video is `video_note`).
 */
function botApiShape(media: NonNullable<MessageMedia>): BotApiMessage {
  const shape: Record<string, unknown> = {};
  switch (media.type) {
    case 'photo':
      shape['photo'] = [];
      break;
    case 'sticker':
      shape['sticker'] = { emoji: media.emoji || undefined };
      break;
    case 'video':
      if (media.isRound) shape['video_note'] = {};
      else if (media.isAnimation || media.isLegacyGif) shape['animation'] = {};
      else shape['video'] = {};
      break;
    case 'document':
      shape['document'] = { file_name: media.fileName ?? undefined };
      break;
    case 'voice':
      shape['voice'] = {};
      break;
    case 'audio':
      shape['audio'] = { title: media.title ?? undefined };
      break;
    case 'venue':
      shape['venue'] = { title: media.title, address: media.address };
      break;
    case 'location':
    case 'live_location':
      shape['location'] = { latitude: media.latitude, longitude: media.longitude };
      break;
    case 'poll':
      shape['poll'] = { question: media.question };
      break;
    case 'dice':
      shape['dice'] = { emoji: media.emoji, value: media.value };
      break;
    case 'contact':
      shape['contact'] = { first_name: media.firstName };
      break;
    case 'game':
      shape['game'] = { title: media.title };
      break;
    case 'story':
      shape['story'] = {};
      break;
    case 'paid':
      shape['paid_media'] = {};
      break;
    default:
      break;
  }
  return shape as unknown as BotApiMessage;
}
