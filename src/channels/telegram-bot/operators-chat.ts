import type { Channel } from '../../domain/ports/channel.js';
import type { TelegramEntity } from '../telegram/entities.js';
import { TELEGRAM_BOT_CHANNEL } from './address.js';

/**
 * What the bot channel offers beyond the `Channel` port: a message to a chat that is no conversation, such as the
 * operators' group that is told when a conversation waits for a person (`operators.notify.telegramChatId`).
 *
 * It stays out of the port on purpose. Everything the port sends is a reply in a conversation: stored first,
 * delivered once through the outbox, addressed by the conversation. A notice to operators is none of that, and no
 * other channel has a chat of operators to post to; the port would ask every channel for an ability one has and
 * one caller uses.
 */
export interface OperatorsChat {
  /**
   * Sends `message` (plain text with its entities) to `chatId`, without link previews.
   * @throws Error when Telegram refuses it (a wrong chat id, a bot not in that chat) or cannot be reached.
   */
  postToChat(chatId: string, message: { readonly text: string; readonly entities: readonly TelegramEntity[] }, signal?: AbortSignal): Promise<void>;
}

/** The running bot channel among `channels`, as an {@link OperatorsChat}; undefined when the bot does not run here. */
export function operatorsChatOf(channels: readonly Channel[]): OperatorsChat | undefined {
  // Found by name and method rather than by class, so that finding it does not load grammY.
  const bot = channels.find((channel) => channel.name === TELEGRAM_BOT_CHANNEL) as (Channel & Partial<OperatorsChat>) | undefined;
  return typeof bot?.postToChat === 'function' ? (bot as Channel & OperatorsChat) : undefined;
}
