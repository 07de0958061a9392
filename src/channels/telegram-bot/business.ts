import { GrammyError, type Api } from 'grammy';
import type { BusinessConnection } from 'grammy/types';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelStateStore } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { TELEGRAM_BOT_CHANNEL, type ChatAddress } from './address.js';

/** A Telegram Business connection as the channel keeps it (in its state, across restarts). */
export interface StoredBusinessConnection {
  readonly id: string;
  /** The business account's owner (their user id). Messages they write themselves are not answered. */
  readonly ownerId: number;
  /** The owner's private chat with the bot. */
  readonly ownerChatId: number;
  readonly enabled: boolean;
  /** The bot may reply in the owner's chats. */
  readonly canReply: boolean;
  /** The bot may mark incoming messages read (`readBusinessMessage`). */
  readonly canReadMessages: boolean;
  /** Unix seconds the connection was established (or last changed). */
  readonly date: number;
}

const KEY_PREFIX = 'business-connection:';

/**
 * Telegram Business: the connections, stored from `business_connection` updates and looked up for every business
 * message and reply (one the channel never heard of, its update older than Palaver, is asked of Telegram once), and
 * the rules on them: which business messages are answered, whether a reply, typing or a read mark may go through a
 * connection, and a connection Telegram refuses remembered as disabled.
 *
 * The state is the channel's, known once it started; before that no connection is known.
 */
export class BusinessConnections {
  readonly #state: () => ChannelStateStore | undefined;
  readonly #api: Api;
  readonly #logger: Logger;
  readonly #cache = new Map<string, StoredBusinessConnection>();

  constructor(state: () => ChannelStateStore | undefined, api: Api, logger: Logger) {
    this.#state = state;
    this.#api = api;
    this.#logger = logger;
  }

  /** Whether a business message is the bot's to answer: a customer's (not the owner's own), through a connection that may reply. */
  async answers(id: string, message: { readonly fromId: number; readonly chatId: number }): Promise<boolean> {
    const connection = await this.get(id);
    // The owner writing to their customer is not a message to answer.
    if (!connection || message.fromId === connection.ownerId) return false;
    if (!connection.enabled || !connection.canReply) {
      this.#logger.info(
        { businessConnectionId: id, chatId: message.chatId },
        'telegram business message not answered: the connection is disabled or may not reply',
      );
      return false;
    }
    return true;
  }

  /** Whether replies (and typing) may go through the connection: known, enabled and allowed to reply. */
  async canReply(id: string): Promise<boolean> {
    const connection = await this.get(id);
    return connection !== undefined && connection.enabled && connection.canReply;
  }

  /** Whether the owner allowed the bot to mark their customers' messages read. */
  async canMarkRead(id: string): Promise<boolean> {
    const connection = await this.get(id);
    return connection?.enabled === true && connection.canReadMessages;
  }

  /**
   * The connection a reply to `address` goes through (undefined outside business chats).
   * @throws ChannelError `business_connection_disabled` when it is disabled, revoked or may not reply.
   */
  async replyThrough(address: ChatAddress, correlationId: string): Promise<string | undefined> {
    const id = address.businessConnectionId;
    if (id === undefined) return undefined;
    if (await this.canReply(id)) return id;
    const error = new ChannelError(
      'business_connection_disabled',
      TELEGRAM_BOT_CHANNEL,
      `The Telegram Business connection ${id} is disabled, revoked or may not reply; the reply to chat ${address.chatId} is not sent.`,
    );
    this.#logger.warn({ businessConnectionId: id, correlationId }, error.message);
    throw error;
  }

  /** A send failure, with a business connection Telegram no longer accepts remembered as disabled. */
  async explain(error: unknown, address: ChatAddress, correlationId: string): Promise<unknown> {
    const id = address.businessConnectionId;
    if (id !== undefined && error instanceof GrammyError && /BUSINESS_CONNECTION|BUSINESS_PEER/i.test(error.description)) {
      await this.disable(id);
      this.#logger.warn({ err: error, businessConnectionId: id, correlationId }, 'telegram refused the business connection; it is now treated as disabled');
      return new ChannelError('business_connection_disabled', TELEGRAM_BOT_CHANNEL, `Telegram refused the business connection ${id}: ${error.description}`, {
        cause: error,
      });
    }
    return error;
  }

  /** Stores a connection as Telegram reported it (created, rights changed, disabled or deleted). */
  async remember(connection: BusinessConnection): Promise<StoredBusinessConnection> {
    const stored = fromTelegram(connection);
    await this.#started().set(KEY_PREFIX + stored.id, JSON.stringify(stored));
    this.#cache.set(stored.id, stored);
    this.#logger.info(
      { businessConnectionId: stored.id, ownerId: stored.ownerId, enabled: stored.enabled, canReply: stored.canReply, canReadMessages: stored.canReadMessages },
      stored.enabled ? 'telegram business connection stored' : 'telegram business connection disabled: its chats get no more replies',
    );
    return stored;
  }

  /** The connection, from memory, the state, or Telegram (then stored); undefined when Telegram does not know it. */
  async get(id: string): Promise<StoredBusinessConnection | undefined> {
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const state = this.#state();
    if (state === undefined) return undefined;
    const raw = await state.get(KEY_PREFIX + id);
    if (raw !== undefined) {
      const stored = JSON.parse(raw) as StoredBusinessConnection;
      this.#cache.set(id, stored);
      return stored;
    }
    try {
      return await this.remember(await this.#api.getBusinessConnection(id));
    } catch (error) {
      this.#logger.warn({ err: error, businessConnectionId: id }, 'telegram business connection unknown to Telegram');
      return undefined;
    }
  }

  /** Marks a connection disabled after Telegram refused to use it (revoked while the channel did not hear of it). */
  async disable(id: string): Promise<void> {
    const current = await this.get(id);
    if (!current?.enabled) return;
    const stored = { ...current, enabled: false };
    await this.#started().set(KEY_PREFIX + id, JSON.stringify(stored));
    this.#cache.set(id, stored);
  }

  #started(): ChannelStateStore {
    const state = this.#state();
    if (state === undefined) throw new Error('BusinessConnections was used before the Telegram channel started.');
    return state;
  }
}

function fromTelegram(connection: BusinessConnection): StoredBusinessConnection {
  // Before Bot API 9.0 the rights were a single `can_reply` flag on the connection.
  const legacy = connection as BusinessConnection & { can_reply?: boolean };
  return {
    id: connection.id,
    ownerId: connection.user.id,
    ownerChatId: connection.user_chat_id,
    enabled: connection.is_enabled,
    canReply: connection.rights?.can_reply === true || legacy.can_reply === true,
    canReadMessages: connection.rights?.can_read_messages === true,
    date: connection.date,
  };
}
