import type { ITelegramStorageProvider, Message, TelegramClient, User } from '@mtcute/node';
import type {
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ChannelRoute,
  InboxPolicy,
  ReplyTarget,
  SendOptions,
  SentPart,
} from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import { createTelegramUserClient, type TelegramNetworkOverride } from './client-factory.js';
import { TelegramUserConnection, type ConnectionHealth } from './connection.js';
import { TELEGRAM_REACTION_EMOJI_ACCEPTED, type Transcribe } from '../telegram/index.js';
import { AnswerPolicy, type AnswerSetting } from './answer-policy.js';
import { importOnFirstContact } from './history-sync.js';
import { historySyncRoute } from './sync-route.js';
import { TelegramUserInbound } from './inbound.js';
import { TelegramUserOutbound } from './outbound.js';
import { OwnSends } from './own-sends.js';
import { DEFAULT_OWNER_TAKEOVER_MINUTES, OwnerTakeover } from './owner-takeover.js';

export interface TelegramUserChannelOptions {
  /** From my.telegram.org. */
  readonly apiId: number;
  readonly apiHash: string;
  /** The MTProto session: its SQLite file (created 0600 if absent), or a storage (tests). */
  readonly session: string | ITelegramStorageProvider;
  /**
   * Called first in `start`, before any network: throws when nobody is signed in (the session store:
   * `TelegramSessionFile.requireSignedIn`, a ChannelError naming `palaver telegram login`).
   */
  readonly checkSignedIn?: () => void;
  /**
   * Takes the single-process lease of the session (`SessionLease.acquire`) after the sign-in check, before
   * connecting; throws naming the holder when another process has it. `onLost`: another process took it over, the
   * session must stop here at once.
   */
  readonly acquireLease?: (onLost: () => void) => Promise<{ release(): Promise<void> }>;
  /** Who is answered (`channels.telegramUser.answer`). Default `everyone` who writes. */
  readonly answer?: AnswerSetting;
  /** Minutes the agent steps back in a chat after its owner wrote there by hand; 0: never. Default 30. */
  readonly ownerTakeoverMinutes?: number;
  /**
   * `channels.telegramUser.importHistoryOnFirstContact`: this many of a chat's last messages are stored (no turn)
   * before the first message of that chat is handed to the pipeline. Default 0: off.
   */
  readonly importHistoryOnFirstContact?: number;
  /** Voice, audio and round video are transcribed with it (the bot's transcriber); without it they are described. */
  readonly transcribe?: Transcribe;
  /** Counted once per owner takeover that starts (`palaver_telegram_user_owner_takeovers_total`). */
  readonly onOwnerTakeover?: () => void;
  /** Registers the count of chats taken over right now for a gauge; returns its removal (called in `stop`). */
  readonly watchTakenOverChats?: (count: () => number) => () => void;
  /** Epoch milliseconds, for owner takeover windows. Default `Date.now`. */
  readonly now?: () => number;
  /** Quiet window of the inbox, ms. Default 2500. */
  readonly quietWindowMs?: number;
  readonly maxWaitMs?: number;
  /** Flood waits up to this many seconds are waited out inside a send; longer ones go back to the outbox. Default 10. */
  readonly floodWaitInlineMaxSeconds?: number;
  /** Each change of connection health (for the gauge `palaver_telegram_user_connection`). */
  readonly onHealth?: (health: ConnectionHealth, detail?: string) => void;
  /** Telegram ended the session (AUTH_KEY_UNREGISTERED, SESSION_REVOKED…): counted, logged, the channel stops. */
  readonly onSignedOut?: (error: string) => void;
  /** Reconnection timing (see TelegramUserConnectionOptions). */
  readonly reconnect?: { readonly initialDelayMs?: number; readonly maxDelayMs?: number; readonly stallTimeoutMs?: number };
  /** Tests: the fake MTProto server instead of Telegram. */
  readonly network?: TelegramNetworkOverride;
  /** mtcute's own log level (0 silent … 5 verbose). Default 1. */
  readonly mtcuteLogLevel?: number;
  readonly logger?: Logger;
}

/**
 * A person's own Telegram account as a Palaver channel (MTProto through mtcute): private chats, answered as that
 * person, on the same inbox and outbox as the bot. `accountNamespace` is `telegram`, shared with the bot, so one
 * Telegram user is one Palaver user whichever way they write.
 *
 * Inbound, each new message of a private chat is handed to `accept` inside mtcute's update handler, so the update
 * state (pts) moves on only after the message is stored; catch-up at start and after every reconnect fetches what
 * arrived meanwhile. Outbound, see `TelegramUserOutbound` (entities, random_id from the delivery key, flood waits).
 */
export class TelegramUserChannel implements Channel {
  readonly name = TELEGRAM_USER_CHANNEL;
  readonly accountNamespace = 'telegram';
  readonly capabilities: ChannelCapabilities = {
    maxMessageChars: 4096,
    streaming: false,
    typing: true,
    typingIntervalMs: 4_000,
    reactions: true,
    reactionEmoji: TELEGRAM_REACTION_EMOJI_ACCEPTED,
    readReceipts: true,
    offlineDelivery: true,
  };
  readonly inbox: InboxPolicy;
  /** `POST /admin/telegram-user/sync`: `palaver telegram sync` through this process while it holds the session. */
  readonly routes: readonly ChannelRoute[];
  readonly #options: TelegramUserChannelOptions;
  readonly #logger: Logger;
  readonly #connection: TelegramUserConnection;
  readonly #outbound: TelegramUserOutbound;
  #inbound: TelegramUserInbound | undefined;
  #ownSends: OwnSends | undefined;
  #unwatchTakeovers: (() => void) | undefined;
  #lease: { release(): Promise<void> } | undefined;
  #started = false;
  #context: ChannelContext | undefined;
  readonly #inboundChains = new Map<number, Promise<void>>();

  constructor(options: TelegramUserChannelOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    this.inbox = { quietWindowMs: options.quietWindowMs ?? 2_500, ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }) };
    this.#connection = new TelegramUserConnection({
      build: ({ onSignedOut }) =>
        createTelegramUserClient({
          apiId: options.apiId,
          apiHash: options.apiHash,
          session: options.session,
          floodWaitInlineMaxMs: (options.floodWaitInlineMaxSeconds ?? 10) * 1000,
          onSignedOut,
          onFloodWait: (method, seconds) => this.#logger.info({ method, seconds }, 'telegram flood wait: waiting inline'),
          ...(options.network ? { network: options.network } : {}),
          ...(options.mtcuteLogLevel === undefined ? {} : { logLevel: options.mtcuteLogLevel }),
        }),
      onMessage: (message) => this.#receive(message),
      onHealth: (health, detail) => {
        if (health === 'signed_out' && detail !== undefined) options.onSignedOut?.(detail);
        options.onHealth?.(health, detail);
      },
      logger: this.#logger,
      ...options.reconnect,
    });
    this.routes = [
      historySyncRoute({
        running: () =>
          this.#context !== undefined && this.#connection.health === 'connected' ? { client: this.#connection.client, context: this.#context } : undefined,
        logger: this.#logger,
      }),
    ];
    this.#outbound = new TelegramUserOutbound({
      client: () => this.#connection.client,
      signedOut: () => this.#connection.health === 'signed_out',
      ownSends: () => this.#ownSends,
      logger: this.#logger,
    });
  }

  /** `connected | reconnecting | signed_out`, and why, for `/health`. */
  get health(): { readonly state: ConnectionHealth; readonly detail?: string } {
    const detail = this.#connection.healthDetail;
    return { state: this.#connection.health, ...(detail === undefined ? {} : { detail }) };
  }

  /** The signed-in account, once connected. */
  get self(): User | undefined {
    return this.#connection.self;
  }

  /** The running mtcute client (history sync, tests). @throws Error when not connected. */
  get client(): TelegramClient {
    return this.#connection.client;
  }

  /**
   * Checks the session without network (fails at once when nobody signed in), takes the session lease, then connects
   * and catches up. A session Telegram refuses does not fail the start: the channel reports `signed_out` and the
   * other channels go on.
   */
  async start(context: ChannelContext): Promise<void> {
    if (this.#started) throw new Error('TelegramUserChannel.start was called twice; a channel is started once by createPalaver');
    this.#options.checkSignedIn?.();
    this.#started = true;
    try {
      await this.#prepareInbound(context);
      this.#lease = await this.#options.acquireLease?.(() => {
        this.#logger.error('another process took the Telegram session lease: stopping the telegram-user channel here');
        void this.#connection.stop();
      });
      await this.#connection.start();
    } catch (error) {
      this.#started = false;
      await this.#connection.stop();
      await this.#lease?.release();
      this.#lease = undefined;
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.#connection.stop();
    this.#unwatchTakeovers?.();
    this.#unwatchTakeovers = undefined;
    const lease = this.#lease;
    this.#lease = undefined;
    await lease?.release();
  }

  /** Sends one part (see `TelegramUserOutbound.send`), quoting `options.replyTo` when given. */
  send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    return this.#outbound.send(target, text, options?.deliveryKey, options?.replyTo);
  }

  typing(target: ReplyTarget): Promise<void> {
    return this.#outbound.typing(target);
  }

  /** @throws ChannelError `reaction_refused` when Telegram refuses the emoji or the message. */
  react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    return this.#outbound.react(target, messageId, emoji);
  }

  markRead(target: ReplyTarget): Promise<void> {
    return this.#outbound.markRead(target);
  }

  /** The inbound side on the pipeline's context: who is answered, our own sends, owner takeovers (from the state). */
  async #prepareInbound(context: ChannelContext): Promise<void> {
    const options = this.#options;
    const now = options.now ?? Date.now;
    const ownSends = new OwnSends({ state: context.state, now });
    this.#context = context;
    const takeover = await OwnerTakeover.load({
      state: context.state,
      windowMs: (options.ownerTakeoverMinutes ?? DEFAULT_OWNER_TAKEOVER_MINUTES) * 60_000,
      now,
      logger: this.#logger,
      ...(options.onOwnerTakeover ? { onTakeover: options.onOwnerTakeover } : {}),
    });
    this.#unwatchTakeovers = options.watchTakenOverChats?.(() => takeover.activeCount());
    this.#ownSends = ownSends;
    this.#inbound = new TelegramUserInbound({
      context,
      // The connection replaces its client after a stalled reconnect: always the current one.
      client: {
        getReplyTo: (message) => this.#connection.client.getReplyTo(message),
        downloadAsBuffer: (location, params) => this.#connection.client.downloadAsBuffer(location, params),
      },
      policy: new AnswerPolicy(options.answer),
      ownSends,
      takeover,
      ...(options.transcribe ? { transcribe: options.transcribe } : {}),
      ...((options.importHistoryOnFirstContact ?? 0) > 0
        ? {
            importHistory: (chatId: number, beforeId: number) =>
              importOnFirstContact(this.#connection.client, context, chatId, beforeId, options.importHistoryOnFirstContact!).then(() => undefined),
          }
        : {}),
      logger: this.#logger,
    });
  }

  /**
   * One new message (live or caught up); resolves once it is stored, so mtcute may move the update state on.
   * mtcute runs message handlers side by side (a catch-up delivers a chat's messages at once): each chat's messages
   * are handed over one after another, in Telegram's order, so the inbox stores them in the order they were written.
   */
  #receive(message: Message): Promise<void> {
    const chatId = message.chat.id;
    const previous = this.#inboundChains.get(chatId) ?? Promise.resolve();
    const handled = previous.then(async () => {
      const outcome = await this.#inbound?.handle(message);
      if (!outcome) return;
      const reason = outcome.kind === 'ignored' ? { reason: outcome.reason } : {};
      this.#logger.debug({ chatId, messageId: message.id, outcome: outcome.kind, ...reason }, 'telegram user-account message handled');
    });
    const chain = handled.then(
      () => undefined,
      () => undefined,
    );
    this.#inboundChains.set(chatId, chain);
    void chain.then(() => {
      if (this.#inboundChains.get(chatId) === chain) this.#inboundChains.delete(chatId);
    });
    return handled;
  }
}
