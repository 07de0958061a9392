import { autoRetry } from '@grammyjs/auto-retry';
import { Bot, type Api } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';
import { DEFAULT_LEASE_TIMINGS, type LeaseTimings } from '../../platform/held-lease.js';
import { ChannelError } from '../../domain/errors.js';
import type {
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ChannelRoute,
  InboxPolicy,
  ReplyTarget,
  SendOptions,
  SentPart,
  TurnEnd,
  TurnProgress,
} from '../../domain/ports/channel.js';
import type { ChannelLeaseRepository } from '../../domain/ports/store.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { TELEGRAM_MAX_MESSAGE_CHARS, TELEGRAM_REACTION_EMOJI_ACCEPTED, toTelegramMessage, type TelegramEntity, type Transcribe } from '../telegram/index.js';
import { TELEGRAM_BOT_CHANNEL } from './address.js';
import { ApprovalButtons } from './approvals.js';
import { BusinessConnections } from './business.js';
import { registerCommands } from './commands.js';
import type { DeadLetterReason } from './dead-letters.js';
import { DraftStreamer } from './drafts.js';
import { fetchForGrammy } from './grammy-fetch.js';
import { Notices } from './notices.js';
import type { OperatorsChat } from './operators-chat.js';
import { BotOutbound } from './outbound.js';
import { LeasedPolling } from './leased-polling.js';
import { DurablePoller, fatalError } from './polling.js';
import { BotUpdates } from './updates.js';
import { BotVoice } from './voice.js';
import { webhookRoute } from './webhook.js';

export type { Transcribe };

export interface TelegramBotChannelOptions {
  /** The bot token from @BotFather. */
  readonly token: string;
  /** Bot API root. Default `https://api.telegram.org`. */
  readonly apiRoot?: string;
  /** `polling` (default) or `webhook` (updates come to `POST /telegram/webhook`). */
  readonly mode?: 'polling' | 'webhook';
  /** Registered with `setWebhook` at start (webhook mode). */
  readonly webhookUrl?: string;
  /** Required in webhook mode: every webhook request must carry it in `X-Telegram-Bot-Api-Secret-Token`. */
  readonly webhookSecret?: string;
  /** Quiet window of the inbox, in ms. Default 2500. */
  readonly quietWindowMs?: number;
  readonly maxWaitMs?: number;
  /** `mention` (default): group messages are answered only when they mention or reply to the bot; `all`: every one. */
  readonly groupAnswer?: 'mention' | 'all';
  /** Live drafts in private chats while the reply is written. Default true. */
  readonly drafts?: boolean;
  /**
   * Chats whose messages are never taken as conversations: the operators' chat (`operators.notify.telegramChatId`),
   * where the bot posts notices and operators talk among themselves, replying to them or mentioning the bot.
   */
  readonly ignoredChats?: readonly (string | number)[];
  /** Voice and audio messages are transcribed with it; without it people are asked to write instead. */
  readonly transcribe?: Transcribe;
  /** The agent's name, for the greeting and the bot's description. */
  readonly agentName?: string;
  readonly logger?: Logger;
  /** Long-poll timeout in seconds. Default 30. */
  readonly pollTimeoutSeconds?: number;
  /** Least time between two draft updates of one reply, ms. Default 1000. */
  readonly draftIntervalMs?: number;
  /** Timeout of each Bot API request, in seconds (must exceed the poll timeout). Default 75. */
  readonly requestTimeoutSeconds?: number;
  /** Attempts at handling one update before it is kept as a dead letter and skipped. Default 3. */
  readonly maxUpdateAttempts?: number;
  /**
   * The longest flood wait (a 429's retry_after) waited out inside a call, in seconds. A longer one leaves the reply
   * part in the outbox, sent when Telegram allows. Default 30.
   */
  readonly floodWaitInlineMaxSeconds?: number;
  /** Called for each update given up (after it is kept as a dead letter), e.g. to count it. */
  readonly onDeadLetter?: (reason: DeadLetterReason) => void;
  /**
   * Polling mode with several processes on one database: the leases (`store.channelLeases`) and their timings.
   * One process polls while it holds the bot's polling lease; the others stand by and take over (see
   * `leased-polling.ts`). Without it this process polls alone, as if no other existed.
   */
  readonly pollingLease?: { readonly leases: ChannelLeaseRepository; readonly timings?: Partial<LeaseTimings> };
  /** What Bot API calls and file downloads go out with (Palaver's: its keep-alive or proxy agent). Default the global `fetch`. */
  readonly fetch?: typeof fetch;
}

/** The updates this channel asks Telegram for. */
const ALLOWED_UPDATES = ['message', 'business_connection', 'business_message', 'callback_query'] as const;

/**
 * Telegram as a Palaver channel, on grammY: private chats, groups (answered when mentioned or replied to), forum
 * topics and Telegram Business chats, each its own conversation (see `address.ts`). It composes small parts:
 *
 * - inbound (`updates.ts`, reading messages in `inbound.ts`, voice in `voice.ts`): each message becomes one
 *   `accept`, acknowledged to Telegram only once it is stored, by long polling through @grammyjs/runner with the
 *   offset in the channel's state (`polling.ts`) or by the webhook on `POST /telegram/webhook` (`webhook.ts`);
 * - outbound (`outbound.ts`, drafts in `drafts.ts`): replies with entities from the shared Markdown formatter
 *   (`../telegram/`), typing, reactions, read marks and live drafts;
 * - Telegram Business (`business.ts`): connections and what may go through them;
 * - approvals (`approvals.ts`): a question goes out with Approve / Decline buttons, and a press is decided for the
 *   account Telegram says pressed;
 * - the channel's own notices (`notices.ts`) and commands (`commands.ts`).
 *
 * Rate limits (429 retry_after) are waited out by @grammyjs/auto-retry.
 */
export class TelegramBotChannel implements Channel, OperatorsChat {
  readonly name = TELEGRAM_BOT_CHANNEL;
  readonly accountNamespace = 'telegram';
  readonly capabilities: ChannelCapabilities;
  readonly inbox: InboxPolicy;
  readonly routes: readonly ChannelRoute[];
  readonly #options: TelegramBotChannelOptions;
  readonly #logger: Logger;
  readonly #bot: Bot;
  readonly #updates: BotUpdates;
  readonly #outbound: BotOutbound;
  #context: ChannelContext | undefined;
  #poller: { start(): Promise<void>; stop(): Promise<void>; readonly isPolling: boolean } | undefined;
  #stopped = false;

  constructor(options: TelegramBotChannelOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger();
    const drafts = options.drafts ?? true;
    this.capabilities = {
      maxMessageChars: TELEGRAM_MAX_MESSAGE_CHARS,
      streaming: drafts,
      typing: true,
      typingIntervalMs: 4_000,
      reactions: true,
      reactionEmoji: TELEGRAM_REACTION_EMOJI_ACCEPTED,
      readReceipts: true,
      offlineDelivery: true,
      approvalButtons: true,
    };
    const quietWindowMs = options.quietWindowMs ?? 2_500;
    this.inbox = { quietWindowMs, ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }) };
    const apiRoot = options.apiRoot ?? 'https://api.telegram.org';
    // Palaver's HTTP client (its connections, the proxy from the environment) instead of grammY's node-fetch.
    const callOut = options.fetch ?? globalThis.fetch;
    this.#bot = new Bot(options.token, { client: { apiRoot, timeoutSeconds: options.requestTimeoutSeconds ?? 75, fetch: fetchForGrammy(callOut) } });
    const api = this.#bot.api;
    const logger = this.#logger;
    const context = () => this.#context;
    const businesses = new BusinessConnections(() => this.#context?.state, api, logger);
    const notices = new Notices({ api, context, agentName: () => options.agentName ?? this.#bot.botInfo.first_name, logger });
    this.#updates = new BotUpdates({
      bot: this.#bot,
      context,
      businesses,
      notices,
      voice: new BotVoice({ api, token: options.token, apiRoot, transcribe: options.transcribe, notices, logger, fetch: callOut }),
      approvals: new ApprovalButtons({ api, context, logger }),
      groupAnswer: options.groupAnswer ?? 'mention',
      ignoredChats: new Set((options.ignoredChats ?? []).map(String)),
      logger,
      onDeadLetter: options.onDeadLetter,
    });
    this.#outbound = new BotOutbound({
      api,
      context,
      businesses,
      drafts: drafts ? new DraftStreamer({ api, logger, intervalMs: options.draftIntervalMs ?? 1_000, format: (text) => toTelegramMessage(text) }) : undefined,
      logger,
    });
    this.routes =
      options.mode === 'webhook'
        ? [
            webhookRoute({
              secret: options.webhookSecret,
              updates: this.#updates,
              accepting: () => this.#context !== undefined && !this.#stopped && this.#bot.isInited(),
              maxUpdateAttempts: options.maxUpdateAttempts ?? 3,
              logger,
            }),
          ]
        : [];
  }

  /** grammY's API client, for what the channel does not wrap. */
  get api(): Api {
    return this.#bot.api;
  }

  /**
   * Checks the token (getMe), registers commands and description when they changed, then polls (after one poll
   * that does not wait, so a conflict refuses the start) or registers the webhook.
   * @throws ChannelError `unauthorized` for a refused token, `conflict` when another process polls this token.
   */
  async start(context: ChannelContext): Promise<void> {
    if (this.#context) throw new Error('TelegramBotChannel.start() was called twice; a channel belongs to one Palaver.');
    this.#context = context;
    this.#bot.botInfo = await this.#getMe();
    // From here on a 429 is waited out (its retry_after) and 5xx and network errors are retried a few times, so no
    // reply is lost to a rate limit. Not for getMe above: a wrong token or API root must fail the start at once.
    this.#bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: this.#options.floodWaitInlineMaxSeconds ?? 30 }));
    const me = this.#bot.botInfo;
    this.#logger.info({ botId: me.id, username: me.username, mode: this.#options.mode ?? 'polling' }, 'telegram bot connected');
    await registerCommands(this.#bot.api, context.state, me.id, this.#options.agentName ?? me.first_name, this.#logger);

    if (this.#options.mode === 'webhook') {
      if (this.#options.webhookUrl) {
        await this.#bot.api.setWebhook(this.#options.webhookUrl, {
          secret_token: this.#options.webhookSecret,
          allowed_updates: [...ALLOWED_UPDATES],
          max_connections: 40,
        });
        this.#logger.info({ url: this.#options.webhookUrl }, 'telegram webhook registered');
      }
      return;
    }
    // Long polling and a webhook exclude each other; the pending updates stay.
    await this.#bot.api.deleteWebhook({ drop_pending_updates: false });
    const onFatal = (error: ChannelError) => {
      this.#logger.error({ err: error, code: error.code }, `telegram polling stopped: ${error.message} Replies to messages already accepted are still sent.`);
    };
    const lease = this.#options.pollingLease;
    this.#poller = lease
      ? new LeasedPolling({
          leases: lease.leases,
          key: `telegram-bot:poll:${me.id}`,
          timings: { ...DEFAULT_LEASE_TIMINGS, ...lease.timings },
          logger: this.#logger,
          createPoller: (held, ended) => this.#durablePoller(context, me.id, { lease: held, onLeaseLost: ended.leaseLost, onFatal: ended.fatal }),
        })
      : this.#durablePoller(context, me.id, { onFatal });
    await this.#poller.start();
  }

  /** The long poller on the offset kept per bot in the channel state. */
  #durablePoller(
    context: ChannelContext,
    botId: number,
    term: { readonly onFatal: (error: ChannelError) => void; readonly lease?: { confirm(): Promise<boolean> }; readonly onLeaseLost?: () => void },
  ): DurablePoller {
    return new DurablePoller({
      api: this.#bot.api,
      state: context.state,
      offsetKey: `offset:${botId}`,
      handle: (update) => this.#updates.receive(update),
      giveUp: (update, failure) => this.#updates.giveUp(update, 'failed', failure.error, failure.attempts),
      maxAttempts: this.#options.maxUpdateAttempts ?? 3,
      allowedUpdates: ALLOWED_UPDATES,
      logger: this.#logger,
      timeoutSeconds: this.#options.pollTimeoutSeconds ?? 30,
      ...term,
    });
  }

  /**
   * Who the bot is, asked three times at most (grammY's own `init` would retry a network error forever, so a wrong
   * API root would hang the start without a word).
   */
  async #getMe(): Promise<UserFromGetMe> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#bot.api.getMe(AbortSignal.timeout(15_000) as Parameters<Api['getMe']>[0]);
      } catch (error) {
        const fatal = fatalError(error);
        if (fatal) throw fatal;
        if (attempt >= 3) {
          throw new ChannelError(
            'unreachable',
            this.name,
            `Telegram's Bot API at ${this.#options.apiRoot ?? 'https://api.telegram.org'} did not answer getMe: ${(error as Error).message}`,
            { cause: error },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
      }
    }
  }

  /**
   * Stops polling and releases the polling lease at once (the webhook answers 503); replies still go out, since the
   * pipeline drains after. Safe twice. The webhook stays registered: other processes may serve it.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#poller?.stop();
    this.#outbound.close();
  }

  /** Whether long polling is running here (false after a 409 Conflict stopped it, or while standing by). */
  get isPolling(): boolean {
    return this.#poller?.isPolling ?? false;
  }

  // ─── outbound (outbound.ts) ──────────────────────────────────────────────────────────────────────────────────

  /**
   * Sends one part as a Telegram message with entities (plain text when Telegram refuses them), quoting
   * `options.replyTo` when given; a question (`options.approval`) with Approve / Decline buttons.
   * @throws ChannelError `business_connection_disabled` when the business connection was disabled or revoked.
   */
  send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    return this.#outbound.send(target, text, options);
  }

  typing(target: ReplyTarget): Promise<void> {
    return this.#outbound.typing(target);
  }

  /** Marks a business chat read up to the last answered message, when the connection has that right. */
  markRead(target: ReplyTarget): Promise<void> {
    return this.#outbound.markRead(target);
  }

  /**
   * Sets the bot's reaction on a message; skipped (and logged once) in a business chat.
   * @throws ChannelError `reaction_refused` when Telegram refuses the emoji or the message.
   */
  react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    return this.#outbound.react(target, messageId, emoji);
  }

  /**
   * Posts a message to a chat that is no conversation (the operators' chat; see `operators-chat.ts` for why this is
   * not part of the `Channel` port). Not stored, not retried beyond the rate-limit waits every call gets.
   */
  async postToChat(chatId: string, message: { readonly text: string; readonly entities: readonly TelegramEntity[] }, signal?: AbortSignal): Promise<void> {
    await this.#bot.api.sendMessage(
      chatId,
      message.text,
      { ...(message.entities.length > 0 ? { entities: [...message.entities] } : {}), link_preview_options: { is_disabled: true } },
      signal as Parameters<Api['sendMessage']>[3],
    );
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    this.#outbound.progress(target, event);
  }

  settle(target: ReplyTarget, end: TurnEnd): void {
    this.#outbound.settle(target, end);
  }
}
