import { ChannelError } from '../../domain/errors.js';

export const TELEGRAM_BOT_CHANNEL = 'telegram-bot';

/**
 * Where a conversation lives on Telegram: a chat, a forum topic of a supergroup, or a private chat of a business
 * account reached through its connection. Everything outbound (replies, typing, drafts, read marks) is addressed
 * from this alone, so nothing of one chat can reach another, and a reply resumed after a restart still knows where
 * it goes.
 */
export interface ChatAddress {
  readonly chatId: number;
  /** A forum topic (`message_thread_id`); only for topic messages of a forum supergroup. */
  readonly threadId?: number;
  /** The business connection a business chat is reached through. */
  readonly businessConnectionId?: string;
  /** A group or supergroup: a conversation shared by its members. */
  readonly shared: boolean;
}

/**
 * The conversation id of an address: `<chatId>` for a chat, `<chatId>:topic:<threadId>` for a forum topic,
 * `business:<connectionId>:<chatId>` for a business chat. Group chat ids are negative, so `shared` is read back
 * from the sign.
 */
export function conversationIdOf(address: Omit<ChatAddress, 'shared'>): string {
  if (address.businessConnectionId !== undefined) return `business:${address.businessConnectionId}:${address.chatId}`;
  if (address.threadId !== undefined) return `${address.chatId}:topic:${address.threadId}`;
  return String(address.chatId);
}

/** @throws ChannelError `unknown_conversation` for an id this channel did not make. */
export function addressOf(conversationId: string): ChatAddress {
  const business = /^business:(.+):(-?\d+)$/.exec(conversationId);
  if (business) return { chatId: Number(business[2]), businessConnectionId: business[1]!, shared: false };
  const topic = /^(-?\d+):topic:(\d+)$/.exec(conversationId);
  if (topic) return { chatId: Number(topic[1]), threadId: Number(topic[2]), shared: true };
  if (/^-?\d+$/.test(conversationId)) {
    const chatId = Number(conversationId);
    return { chatId, shared: chatId < 0 };
  }
  throw new ChannelError('unknown_conversation', TELEGRAM_BOT_CHANNEL, `"${conversationId}" is not a Telegram conversation id of this channel.`);
}
