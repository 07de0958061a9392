import type { HandoffSource } from '../../domain/ports/store.js';
import { cut, type HandoffNotice } from './handoff-notice.js';
import type { NoticeWay } from './notice-way.js';

/** A formatting entity of the Bot API (offsets in UTF-16 units), of the two kinds a notice uses. */
export interface NoticeEntity {
  readonly type: 'bold' | 'code';
  readonly offset: number;
  readonly length: number;
}

/** A Telegram message as plain text and its entities: nothing a person wrote is ever read as formatting. */
export interface NoticeMessage {
  readonly text: string;
  readonly entities: readonly NoticeEntity[];
}

/**
 * Posts a message to one Telegram chat: what the running bot channel offers for it (`operatorsChatOf` in
 * src/channels/telegram-bot/operators-chat.ts), handed over by the composition root.
 */
export interface TelegramChatPoster {
  postToChat(chatId: string, message: NoticeMessage, signal?: AbortSignal): Promise<void>;
}

/** Tells operators in a Telegram chat of theirs (`operators.notify.telegramChatId`) through the bot. */
export class TelegramNotices implements NoticeWay {
  readonly via = 'telegram';
  readonly #poster: TelegramChatPoster;
  readonly #chatId: string;

  constructor(poster: TelegramChatPoster, chatId: string | number) {
    this.#poster = poster;
    this.#chatId = String(chatId);
  }

  send(notice: HandoffNotice, signal: AbortSignal): Promise<void> {
    return this.#poster.postToChat(this.#chatId, telegramNoticeMessage(notice), signal);
  }
}

/** A name longer than this is cut (Telegram's are short; a web visitor's need not be). */
const NAME_CHARS = 100;

const ASKED_BY: Record<HandoffSource, string> = { model: 'the agent', tool: 'a tool', phrase: 'the person (in words that ask for one)' };

/**
 * The notice as operators read it in Telegram: who (name, channel), why, who asked and when, the last messages,
 * and the link to the conversation on the dashboard (or its id). Every text is one line with its whitespace
 * collapsed; the notice's own bounds keep it far below Telegram's 4096 characters.
 */
export function telegramNoticeMessage(notice: HandoffNotice): NoticeMessage {
  const message = new MessageWriter();
  const who = cut(oneLine(notice.person.name ?? ''), NAME_CHARS) || `user ${notice.userId}`;
  message.bold(`🙋 A person is wanted: ${who}${notice.channel === null ? '' : ` (${notice.channel})`}`);
  message.line(`Why: ${oneLine(notice.reason)}`);
  message.line(`Asked by ${ASKED_BY[notice.source]}, ${notice.requestedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  if (notice.round > 1) message.line(`Reminder ${notice.round - 1} of ${notice.rounds - 1}: nobody has taken it yet.`);
  if (notice.lastMessages.length > 0) {
    message.line('');
    message.line('Last messages:');
    for (const said of notice.lastMessages) message.line(`${said.role === 'user' ? '› Person' : '‹ Agent'}: ${oneLine(said.text)}`);
  }
  message.line('');
  if (notice.url === null) {
    message.line('Conversation ');
    message.code(notice.sessionId);
  } else {
    // A plain URL: Telegram links it itself, and a link entity to a host it dislikes would refuse the whole message.
    message.line(`Open it: ${notice.url}`);
  }
  return message.finish();
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Appends lines and records entities by UTF-16 offset (a JavaScript string's length). */
class MessageWriter {
  #text = '';
  readonly #entities: NoticeEntity[] = [];

  line(text: string): void {
    this.#text += `\n${text}`;
  }

  bold(text: string): void {
    this.#mark('bold', text);
  }

  code(text: string): void {
    this.#mark('code', text);
  }

  #mark(type: NoticeEntity['type'], text: string): void {
    if (text.length > 0) this.#entities.push({ type, offset: this.#text.length, length: text.length });
    this.#text += text;
  }

  finish(): NoticeMessage {
    return { text: this.#text, entities: this.#entities };
  }
}
