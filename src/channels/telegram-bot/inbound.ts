import type { Message, MessageEntity, UserFromGetMe } from 'grammy/types';
import { describeContent, quotedText, withQuote, type AudioMedia, type TelegramContent, type TelegramMedia } from '../telegram/index.js';

export { AUDIO_PLACEHOLDER } from '../telegram/index.js';

/** What a Telegram message says to the model, before any voice is transcribed. */
export interface ReadMessage {
  /** The text for the model: the message text or caption, media described by type, a quoted reply in front. */
  readonly text: string;
  /** The sender's own phone number, when they shared their own contact. */
  readonly phone?: string;
  /** A voice or audio message to transcribe (its Bot API file id); the transcript replaces `AUDIO_PLACEHOLDER` in `text`. */
  readonly audio?: { readonly fileId: string; readonly media: AudioMedia };
}

/**
 * Reads a message as text for the model (`describeContent` in `../telegram/`). A reply carries the quoted text first
 * (`> …` lines), a caption follows its media's description (`[photo] caption`), a command addressed `/cmd@bot` loses
 * the suffix. Voice and audio are left to transcribe. Returns undefined for messages with nothing to answer
 * (service messages: members joining, pinned messages, topics created, …).
 */
export function readMessage(message: Message, bot: UserFromGetMe): ReadMessage | undefined {
  const body = describeContent(contentOf(message, bot), { transcribed: ['voice', 'audio'] });
  if (body === undefined) return undefined;
  const { audio, ...read } = body;
  const text = withQuote(quoteOf(message), read.text);
  const file = message.voice ?? message.audio;
  return { ...read, text, ...(audio && file ? { audio: { fileId: file.file_id, media: audio } } : {}) };
}

/** The message as the shared reader takes it, without mentions of this bot in its text and caption. */
function contentOf(message: Message, bot: UserFromGetMe): TelegramContent {
  // Voice, audio and a contact come first: they are what the message is (its text or transcript, the phone).
  const media = message.voice || message.audio || message.contact ? ownMediaOf(message) : mediaOf(message);
  return {
    text: message.text === undefined ? undefined : stripBotMention(message.text, message.entities, bot),
    caption: message.caption ? stripBotMention(message.caption, message.caption_entities, bot) : undefined,
    media,
  };
}

function ownMediaOf(message: Message): TelegramMedia | undefined {
  if (message.voice) return { kind: 'voice', mimeType: message.voice.mime_type, fileSize: message.voice.file_size };
  if (message.audio) {
    const { audio } = message;
    return { kind: 'audio', title: audio.title, fileName: audio.file_name, mimeType: audio.mime_type, fileSize: audio.file_size };
  }
  if (message.contact) {
    const { contact } = message;
    // Only the sender's own contact is their phone; a friend's card is just something they showed.
    const isSender = contact.user_id !== undefined && contact.user_id === message.from?.id;
    return { kind: 'contact', firstName: contact.first_name, lastName: contact.last_name, phone: contact.phone_number, isSender };
  }
  return undefined;
}

/** The medium of a Bot API message; an animation is checked before its `document` (the Bot API sets both). */
export function mediaOf(message: Message): TelegramMedia | undefined {
  if (message.photo) return { kind: 'photo' };
  if (message.sticker) return { kind: 'sticker', emoji: message.sticker.emoji };
  if (message.animation) return { kind: 'animation' };
  if (message.video) return { kind: 'video' };
  if (message.video_note) return { kind: 'video_note', fileSize: message.video_note.file_size };
  if (message.document) return { kind: 'document', fileName: message.document.file_name };
  if (message.voice || message.audio) return ownMediaOf(message);
  if (message.venue) return { kind: 'venue', title: message.venue.title, address: message.venue.address };
  if (message.location) return { kind: 'location', latitude: message.location.latitude, longitude: message.location.longitude };
  if (message.poll) return { kind: 'poll', question: message.poll.question };
  if (message.dice) return { kind: 'dice', emoji: message.dice.emoji, value: message.dice.value };
  if (message.contact) return ownMediaOf(message);
  if (message.game) return { kind: 'game', title: message.game.title };
  if (message.story) return { kind: 'story' };
  if (message.paid_media) return { kind: 'paid_media' };
  return undefined;
}

/** The text a reply quotes; none for a topic message whose "reply" is only the topic itself. */
function quoteOf(message: Message): string | undefined {
  const partial = message.quote?.text;
  if (partial) return partial;
  const replied = message.reply_to_message;
  if (!replied || replied.forum_topic_created || (message.is_topic_message && replied.message_id === message.message_thread_id)) return undefined;
  return quotedText({ text: replied.text, caption: replied.caption, media: mediaOf(replied) });
}

/**
 * True when a group message is meant for the bot: it mentions the bot (`@name` or a text mention), replies to one of
 * the bot's messages, or is a command addressed to it (`/reset@name`, or `/reset` alone).
 */
export function isAddressedToBot(message: Message, bot: UserFromGetMe): boolean {
  if (message.reply_to_message?.from?.id === bot.id && !(message.is_topic_message && message.reply_to_message.message_id === message.message_thread_id))
    return true;
  const text = message.text ?? message.caption ?? '';
  const entities = message.entities ?? message.caption_entities ?? [];
  const name = `@${bot.username}`.toLowerCase();
  for (const entity of entities) {
    const part = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    if (entity.type === 'mention' && part === name) return true;
    if (entity.type === 'text_mention' && entity.user.id === bot.id) return true;
    if (entity.type === 'bot_command' && entity.offset === 0 && (!part.includes('@') || part.endsWith(name))) return true;
  }
  return false;
}

/** The command a message starts with (`start` for `/start` or `/start@thisbot`), if it is addressed to this bot. */
export function commandOf(message: Message, bot: UserFromGetMe): string | undefined {
  const text = message.text ?? '';
  const entity = message.entities?.find((e) => e.type === 'bot_command' && e.offset === 0);
  if (!entity) return undefined;
  const [command, target] = text.slice(1, entity.length).split('@');
  if (target !== undefined && target.toLowerCase() !== bot.username.toLowerCase()) return undefined;
  return command?.toLowerCase();
}

/** The text without `@botname` mentions (the model need not read its own name at the start of every message). */
function stripBotMention(text: string, entities: readonly MessageEntity[] | undefined, bot: UserFromGetMe): string {
  const name = `@${bot.username}`.toLowerCase();
  const mentions = (entities ?? []).filter((e) => e.type === 'mention' && text.slice(e.offset, e.offset + e.length).toLowerCase() === name);
  if (mentions.length === 0) return text;
  let out = '';
  let at = 0;
  for (const mention of [...mentions].sort((a, b) => a.offset - b.offset)) {
    out += text.slice(at, mention.offset);
    at = mention.offset + mention.length;
  }
  out += text.slice(at);
  const stripped = out.replace(/[ \t]{2,}/g, ' ').trim();
  return stripped === '' ? text : stripped;
}
