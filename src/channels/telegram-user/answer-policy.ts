import type { Message, User } from '@mtcute/core';

/** Telegram's own service account ("Telegram": login codes, security alerts). Never answered. */
export const TELEGRAM_SERVICE_USER_ID = 777000;

/**
 * Who the account answers (`channels.telegramUser.answer`): `everyone` who writes to it (default), only its
 * `contacts`, or only the listed people (Telegram user ids, or usernames with or without `@`).
 */
export type AnswerSetting = 'everyone' | 'contacts' | readonly (string | number)[];

/** Why a message is not answered; logged, and returned to the caller for tests. */
export type NotAnswered =
  /** A group, supergroup or channel: the account answers private chats only. */
  | 'not_private'
  /** Saved Messages (the account writing to itself). */
  | 'own_chat'
  /** A service message: a call, a pin, a screenshot notice, a chat created … */
  | 'service'
  | 'bot'
  /** Telegram's service notifications (777000) or an official support account. */
  | 'telegram_service'
  /** `answer: contacts` and the person is not in the account's contacts. */
  | 'not_contact'
  /** `answer: [list]` and the person is not on it. */
  | 'not_listed';

/**
 * Decides whether the person on the other side of a private chat is someone the agent answers. Pure: it looks at
 * the message and its peers only, so the same answer comes for a live update and for one caught up after downtime.
 *
 * The account never writes first: the channel's only sends are replies the core makes to messages this policy let
 * through, so someone the agent may answer is by construction someone who wrote.
 */
export class AnswerPolicy {
  readonly #setting: AnswerSetting;
  readonly #ids: ReadonlySet<number>;
  readonly #usernames: ReadonlySet<string>;

  constructor(setting: AnswerSetting = 'everyone') {
    this.#setting = setting;
    const ids = new Set<number>();
    const usernames = new Set<string>();
    if (typeof setting !== 'string') {
      for (const entry of setting) {
        const text = String(entry).trim();
        if (/^-?\d+$/.test(text)) ids.add(Number(text));
        else if (text !== '') usernames.add(text.replace(/^@/, '').toLowerCase());
      }
    }
    this.#ids = ids;
    this.#usernames = usernames;
  }

  /**
   * The person on the other side of `message`'s chat, when it is a private chat with someone other than the account
   * itself; otherwise why the chat is out of scope. Incoming and outgoing (the owner's) messages alike.
   */
  counterpart(message: Message): { readonly user: User } | { readonly notAnswered: NotAnswered } {
    const chat = message.chat;
    if (chat.type !== 'user') return { notAnswered: 'not_private' };
    if (chat.isSelf) return { notAnswered: 'own_chat' };
    return { user: chat };
  }

  /** Why the person in `message`'s chat is not answered, or undefined when they are. */
  check(message: Message): NotAnswered | undefined {
    const side = this.counterpart(message);
    if ('notAnswered' in side) return side.notAnswered;
    if (message.isService) return 'service';
    return this.checkPerson(side.user);
  }

  /** Why `user` is not answered, or undefined when they are. */
  checkPerson(user: User): NotAnswered | undefined {
    if (user.isBot) return 'bot';
    if (user.id === TELEGRAM_SERVICE_USER_ID || user.isSupport) return 'telegram_service';
    if (this.#setting === 'everyone') return undefined;
    if (this.#setting === 'contacts') return user.isContact ? undefined : 'not_contact';
    if (this.#ids.has(user.id)) return undefined;
    const names = [user.username, ...(user.usernames ?? []).map((u) => u.username)].filter((n): n is string => !!n);
    return names.some((name) => this.#usernames.has(name.toLowerCase())) ? undefined : 'not_listed';
  }
}
