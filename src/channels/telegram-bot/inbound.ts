import type { Message, MessageEntity, UserFromGetMe } from 'grammy/types';

/** What a Telegram message says to the model, before any voice is transcribed. */
export interface ReadMessage {
  /** The text for the model: the message text or caption, media described by type, a quoted reply in front. */
  readonly text: string;
  /** The sender's own phone number, when they shared their own contact. */
  readonly phone?: string;
  /** A voice or audio message to transcribe; its transcript takes the place of `[voice message]` in `text`. */
  readonly audio?: { readonly fileId: string; readonly fileSize: number | undefined; readonly mimeType: string; readonly filename: string };
}

/** Where a transcript goes in `ReadMessage.text`. */
export const AUDIO_PLACEHOLDER = '\u0000audio\u0000';

const MAX_QUOTE_CHARS = 1_000;

/**
 * Reads a message as text for the model. A reply carries the quoted text first (`> …` lines), a caption follows
 * its media's description (`[photo] caption`), a command addressed `/cmd@bot` loses the suffix. Returns undefined for
 * messages with nothing to answer (service messages: members joining, pinned messages, topics created, …).
 */
export function readMessage(message: Message, bot: UserFromGetMe): ReadMessage | undefined {
  const body = describeBody(message, bot);
  if (body === undefined) return undefined;
  const quoted = quoteOf(message);
  const text = quoted ? `${quoted}\n\n${body.text}` : body.text;
  return { ...body, text };
}

function describeBody(message: Message, bot: UserFromGetMe): Omit<ReadMessage, 'text'> & { text: string } | undefined {
  const caption = message.caption ? ` ${stripBotMention(message.caption, message.caption_entities, bot)}` : '';
  if (message.text !== undefined) return { text: stripBotMention(message.text, message.entities, bot) };
  if (message.voice) {
    return {
      text: `${AUDIO_PLACEHOLDER}${caption ? `\n\n${caption.trim()}` : ''}`,
      audio: { fileId: message.voice.file_id, fileSize: message.voice.file_size, mimeType: message.voice.mime_type ?? 'audio/ogg', filename: 'voice.ogg' },
    };
  }
  if (message.audio) {
    return {
      text: `${AUDIO_PLACEHOLDER}${caption ? `\n\n${caption.trim()}` : ''}`,
      audio: {
        fileId: message.audio.file_id,
        fileSize: message.audio.file_size,
        mimeType: message.audio.mime_type ?? 'audio/mpeg',
        filename: message.audio.file_name ?? 'audio.mp3',
      },
    };
  }
  if (message.contact) {
    const { contact } = message;
    const name = [contact.first_name, contact.last_name].filter(Boolean).join(' ');
    // Only the sender's own contact is their phone; a friend's card is just something they showed.
    const own = contact.user_id !== undefined && contact.user_id === message.from?.id;
    return { text: `[contact: ${name}, ${contact.phone_number}]`, ...(own ? { phone: contact.phone_number } : {}) };
  }
  const media = describeMedia(message);
  if (media === undefined) return undefined;
  return { text: `${media}${caption}` };
}

/** `[photo]`, `[sticker 😀]`, `[document: report.pdf]`…; undefined for a message that holds none of them. */
export function describeMedia(message: Message): string | undefined {
  if (message.photo) return '[photo]';
  if (message.sticker) return `[sticker${message.sticker.emoji ? ` ${message.sticker.emoji}` : ''}]`;
  if (message.animation) return '[GIF]';
  if (message.video) return '[video]';
  if (message.video_note) return '[video message]';
  if (message.document) return `[document${message.document.file_name ? `: ${message.document.file_name}` : ''}]`;
  if (message.voice) return '[voice message]';
  if (message.audio) return `[audio${message.audio.title ? `: ${message.audio.title}` : ''}]`;
  if (message.venue) return `[venue: ${message.venue.title}, ${message.venue.address}]`;
  if (message.location) return `[location: ${message.location.latitude}, ${message.location.longitude}]`;
  if (message.poll) return `[poll: ${message.poll.question}]`;
  if (message.dice) return `[dice ${message.dice.emoji}: ${message.dice.value}]`;
  if (message.contact) return `[contact: ${message.contact.first_name}]`;
  if (message.game) return `[game: ${message.game.title}]`;
  if (message.story) return '[story]';
  if (message.paid_media) return '[paid media]';
  return undefined;
}

/** The text a reply quotes, as `> ` lines; none for a topic message whose "reply" is only the topic itself. */
function quoteOf(message: Message): string | undefined {
  const replied = message.reply_to_message;
  const partial = message.quote?.text;
  let quoted: string | undefined;
  if (partial) quoted = partial;
  else if (replied && !replied.forum_topic_created && !(message.is_topic_message && replied.message_id === message.message_thread_id)) {
    quoted = replied.text ?? (replied.caption ? `${describeMedia(replied) ?? ''} ${replied.caption}`.trim() : describeMedia(replied));
  }
  if (!quoted) return undefined;
  const cut = quoted.length > MAX_QUOTE_CHARS ? `${quoted.slice(0, MAX_QUOTE_CHARS)}…` : quoted;
  return cut
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

/**
 * True when a group message is meant for the bot: it mentions the bot (`@name` or a text mention), replies to one of
 * the bot's messages, or is a command addressed to it (`/reset@name`, or `/reset` alone).
 */
export function isAddressedToBot(message: Message, bot: UserFromGetMe): boolean {
  if (message.reply_to_message?.from?.id === bot.id && !(message.is_topic_message && message.reply_to_message.message_id === message.message_thread_id)) return true;
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
