import type { Api } from 'grammy';
import type { BusinessConnection } from 'grammy/types';
import type { ChannelStateStore } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';

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
 * Business connections: stored from `business_connection` updates, looked up for every business message and reply.
 * A connection the channel never heard of (its update came before Palaver ran) is asked of Telegram once.
 */
export class BusinessConnections {
  readonly #state: ChannelStateStore;
  readonly #api: Api;
  readonly #logger: Logger;
  readonly #cache = new Map<string, StoredBusinessConnection>();

  constructor(state: ChannelStateStore, api: Api, logger: Logger) {
    this.#state = state;
    this.#api = api;
    this.#logger = logger;
  }

  /** Stores a connection as Telegram reported it (created, rights changed, disabled or deleted). */
  async remember(connection: BusinessConnection): Promise<StoredBusinessConnection> {
    const stored = fromTelegram(connection);
    await this.#state.set(KEY_PREFIX + stored.id, JSON.stringify(stored));
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
    const raw = await this.#state.get(KEY_PREFIX + id);
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
    await this.#state.set(KEY_PREFIX + id, JSON.stringify(stored));
    this.#cache.set(id, stored);
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
