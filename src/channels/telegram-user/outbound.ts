import { tl, type TelegramClient } from '@mtcute/node';
import { ChannelError, ChannelRetryLaterError } from '../../domain/errors.js';
import type { ReplyTarget, SentPart } from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { telegramReaction, toTelegramMessage, toTlEntities, type TelegramEntity as MessageEntity } from '../telegram/index.js';
import { randomIdOf } from './random-id.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import type { OwnSends } from './own-sends.js';

export interface TelegramUserOutboundOptions {
  /** The current client, or why there is none (the connection's `client`). */
  readonly client: () => TelegramClient;
  /** Whether Telegram ended the session (then nothing can be sent until someone signs in again). */
  readonly signedOut: () => boolean;
  /** Where each send is noted, so its echo is not taken for the owner typing (set once the channel started). */
  readonly ownSends?: () => OwnSends | undefined;
  readonly logger?: Logger;
  /** How long a part waits in the outbox while the session is signed out, before the next try. Default 10 min. */
  readonly signedOutRetryMs?: number;
  readonly now?: () => number;
}

/**
 * What the user-account channel sends: reply parts (Markdown as entities, a `random_id` from the delivery key, long
 * flood waits handed back to the outbox, a quote of the message a part answers), typing, reactions and read marks.
 * Conversation ids are the other person's user id (private chats only).
 */
export class TelegramUserOutbound {
  readonly #options: TelegramUserOutboundOptions;
  readonly #logger: Logger;
  readonly #now: () => number;
  /** Until when Telegram asked this account to wait before sending (a flood wait too long to wait inline). */
  #floodUntil = 0;

  constructor(options: TelegramUserOutboundOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    this.#now = options.now ?? Date.now;
  }

  /**
   * Sends one part. Flood waits up to the inline limit are waited out by mtcute; a longer one throws
   * ChannelRetryLaterError, and so does every send until it is over (Telegram would refuse them the same way).
   * `replyTo`: the message the part answers, shown quoted (a part whose quoted message is gone is sent unquoted).
   * @throws ChannelRetryLaterError also while the session is signed out, so the part is kept, not dropped.
   */
  async send(target: ReplyTarget, text: string, deliveryKey: string | undefined, replyTo?: string): Promise<SentPart> {
    const waitMs = this.#floodUntil - this.#now();
    if (waitMs > 0) throw new ChannelRetryLaterError(TELEGRAM_USER_CHANNEL, waitMs, `Telegram asked to wait ${Math.ceil(waitMs / 1000)} s before sending`);
    if (this.#options.signedOut()) throw this.#signedOutError();
    const chatId = chatIdOf(target.conversationId);
    const formatted = format(text, this.#logger, target.correlationId);
    // Without a delivery key (a caller outside the outbox) the part still gets a random_id, just not a stable one.
    const randomId = deliveryKey === undefined ? undefined : randomIdOf(deliveryKey);
    const ownKey = deliveryKey ?? `unkeyed:${target.correlationId}:${this.#now()}`;
    const quoted = messageIdOf(replyTo);
    await this.#noteOwn(target, (own) => own.willSend(String(chatId), ownKey, formatted.text));
    try {
      const sent = await this.#options
        .client()
        .sendText(
          chatId,
          { text: formatted.text, entities: toTlEntities(formatted.entities) },
          { ...(randomId ? { randomId } : {}), ...(quoted === undefined ? {} : { replyTo: quoted }), disableWebPreview: true },
        );
      await this.#noteOwn(target, (own) => own.sent(String(chatId), ownKey, sent.id));
      return { messageId: String(sent.id) };
    } catch (error) {
      throw this.#explain(error);
    }
  }

  async typing(target: ReplyTarget): Promise<void> {
    if (this.#options.signedOut()) return;
    await this.#options.client().setTyping({ peerId: chatIdOf(target.conversationId), status: 'typing' });
  }

  /**
   * Sets the account's reaction on a message of the chat (one emoji of Telegram's standard list, `❤️` and `❤` alike).
   * @throws ChannelError `reaction_refused` for an emoji outside the list or a message Telegram refuses (deleted,
   *   never there); the pipeline logs it and the turn goes on.
   */
  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    if (this.#options.signedOut()) return;
    const reaction = telegramReaction(emoji);
    const message = messageIdOf(messageId);
    if (reaction === undefined)
      throw new ChannelError('reaction_refused', TELEGRAM_USER_CHANNEL, `${emoji} is not one of the emoji Telegram allows as a reaction`);
    if (message === undefined) throw new ChannelError('reaction_refused', TELEGRAM_USER_CHANNEL, `"${messageId}" is not a Telegram message id`);
    try {
      await this.#options.client().sendReaction({ chatId: chatIdOf(target.conversationId), message, emoji: reaction });
    } catch (error) {
      if (tl.RpcError.is(error) && error.code === 400) {
        throw new ChannelError('reaction_refused', TELEGRAM_USER_CHANNEL, `Telegram refused the reaction ${reaction} on message ${message}: ${error.text}`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /** Marks the chat read up to the newest answered message, as a person opening the chat would. */
  async markRead(target: ReplyTarget): Promise<void> {
    if (this.#options.signedOut()) return;
    const ids = target.inReplyTo.map(Number).filter((id) => Number.isSafeInteger(id) && id > 0);
    if (ids.length === 0) return;
    await this.#options.client().readHistory(chatIdOf(target.conversationId), { maxId: Math.max(...ids) });
  }

  /**
   * Notes a send for OwnSends. A failure to note it is logged, never thrown: the part must not be refused (or, once
   * Telegram took it, sent again) for it; at worst its echo after a crash is taken for the owner's message.
   */
  async #noteOwn(target: ReplyTarget, note: (own: OwnSends) => Promise<void>): Promise<void> {
    const own = this.#options.ownSends?.();
    if (!own) return;
    try {
      await note(own);
    } catch (error) {
      this.#logger.warn(
        { err: error, correlationId: target.correlationId },
        'could not note a sent part in the channel state; its echo may be taken for the owner',
      );
    }
  }

  #explain(error: unknown): unknown {
    if (tl.RpcError.is(error, 'FLOOD_WAIT_%d')) {
      const waitMs = Math.max(1, error.seconds) * 1000;
      this.#floodUntil = Math.max(this.#floodUntil, this.#now() + waitMs);
      this.#logger.warn({ seconds: error.seconds }, 'telegram asked the user account to wait before sending; the part stays in the outbox');
      return new ChannelRetryLaterError(TELEGRAM_USER_CHANNEL, waitMs, `Telegram asked to wait ${error.seconds} s before sending`, { cause: error });
    }
    if (this.#options.signedOut()) return this.#signedOutError(error);
    if (tl.RpcError.is(error, 'PEER_ID_INVALID') || tl.RpcError.is(error, 'INPUT_USER_DEACTIVATED') || tl.RpcError.is(error, 'USER_IS_BLOCKED')) {
      return new ChannelError('recipient_unreachable', TELEGRAM_USER_CHANNEL, `Telegram refused the message: ${error.text}`, { cause: error });
    }
    return error;
  }

  #signedOutError(cause?: unknown): ChannelRetryLaterError {
    return new ChannelRetryLaterError(
      TELEGRAM_USER_CHANNEL,
      this.#options.signedOutRetryMs ?? 10 * 60_000,
      'the Telegram user account is signed out (run `palaver telegram login`); the part waits in the outbox',
      cause === undefined ? undefined : { cause },
    );
  }
}

/** The other person's user id: the conversation id of a private chat. */
export function chatIdOf(conversationId: string): number {
  const id = Number(conversationId);
  if (!Number.isSafeInteger(id) || id <= 0)
    throw new ChannelError('invalid_target', TELEGRAM_USER_CHANNEL, `not a private chat of the Telegram user account: ${conversationId}`);
  return id;
}

/** A Telegram message id from the pipeline's string form; undefined for anything else. */
function messageIdOf(id: string | undefined): number | undefined {
  if (id === undefined || !/^\d{1,10}$/.test(id)) return undefined;
  const value = Number(id);
  return value > 0 && value <= 0x7fff_ffff ? value : undefined;
}

function format(text: string, logger: Logger, correlationId: string): { text: string; entities: MessageEntity[] } {
  try {
    const formatted = toTelegramMessage(text);
    // The core split the Markdown at 4096; formatting only removes characters, but never send more than Telegram takes.
    if (formatted.text.trim() === '' || formatted.text.length > 4096) return { text, entities: [] };
    return formatted;
  } catch (error) {
    logger.warn({ err: error, correlationId }, 'markdown could not be turned into telegram entities; sent as plain text');
    return { text, entities: [] };
  }
}
