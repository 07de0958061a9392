import { timingSafeEqual } from 'node:crypto';
import { autoRetry } from '@grammyjs/auto-retry';
import { sequentialize } from '@grammyjs/runner';
import { Bot, GrammyError, type Api } from 'grammy';
import type { Message, Update, UserFromGetMe } from 'grammy/types';
import { ChannelError } from '../../domain/errors.js';
import type {
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ChannelRoute,
  InboundMessage,
  InboxPolicy,
  ReplyTarget,
  SentPart,
  TurnEnd,
  TurnProgress,
} from '../../domain/ports/channel.js';
import { silentLogger, type Logger } from '../../observability/logger.js';
import { addressOf, conversationIdOf, TELEGRAM_BOT_CHANNEL, type ChatAddress } from './address.js';
import { BusinessConnections } from './business.js';
import { registerCommands } from './commands.js';
import { systemText, type SystemTextKey } from '../../i18n/index.js';
import { DeadLetters, type DeadLetterReason } from './dead-letters.js';
import { DraftStreamer } from './drafts.js';
import { formatReplyPart, TELEGRAM_MAX_MESSAGE_CHARS, toTelegramMessage, transcribeAudio, withTranscript, type TelegramMessage, type Transcribe } from '../telegram/index.js';
import { commandOf, isAddressedToBot, readMessage, type ReadMessage } from './inbound.js';
import { DurablePoller, fatalError } from './polling.js';
import { malformation } from './update-shape.js';

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
  /** Called for each update given up (after it is kept as a dead letter), e.g. to count it. */
  readonly onDeadLetter?: (reason: DeadLetterReason) => void;
}

/** The updates this channel asks Telegram for. */
const ALLOWED_UPDATES = ['message', 'business_connection', 'business_message'] as const;
/** The Bot API refuses to hand out files larger than this. */
const MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;

/**
 * Telegram as a Palaver channel, on grammY: private chats, groups (answered when mentioned or replied to), forum
 * topics and Telegram Business chats, each its own conversation (see `address.ts`).
 *
 * Inbound, each message becomes one `accept` (dedupe key: the chat's message id), acknowledged to Telegram only once
 * it is stored: long polling through @grammyjs/runner with the offset in the channel's state (`DurablePoller`), or a
 * webhook on `POST /telegram/webhook` that answers 200 only after `accept`. Each chat's updates are handled in order
 * (`sequentialize`), different chats at once. Voice and audio are transcribed before `accept`; other media are
 * described (`[photo]`); a reply quotes what it answers. `/start` greets and `/reset` starts the conversation afresh,
 * both answered by the channel itself.
 *
 * Outbound, replies are sent with entities from the Markdown formatter (plain text if Telegram still refuses them),
 * through the business connection where there is one (refused with `business_connection_disabled` when it was
 * disabled or revoked), typing through the same connection, business messages marked read when the connection has
 * that right, and live drafts in private chats. Rate limits (429 retry_after) are waited out by @grammyjs/auto-retry.
 */
export class TelegramBotChannel implements Channel {
  readonly name = TELEGRAM_BOT_CHANNEL;
  readonly accountNamespace = 'telegram';
  readonly capabilities: ChannelCapabilities;
  readonly inbox: InboxPolicy;
  readonly routes: readonly ChannelRoute[];
  readonly #options: TelegramBotChannelOptions;
  readonly #logger: Logger;
  readonly #bot: Bot;
  readonly #drafts: DraftStreamer;
  #context: ChannelContext | undefined;
  #businesses: BusinessConnections | undefined;
  #poller: DurablePoller | undefined;
  #deadLetters: DeadLetters | undefined;
  /** Webhook deliveries of updates that failed, by update id, so a redelivered update is not retried forever. */
  readonly #webhookAttempts = new Map<number, number>();
  #stopped = false;
  /** Turns whose first part went out (groups quote the message answered on the first part only). */
  readonly #quoted = new Set<string>();

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
      readReceipts: true,
      offlineDelivery: true,
    };
    const quietWindowMs = options.quietWindowMs ?? 2_500;
    this.inbox = { quietWindowMs, ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }) };
    this.#bot = new Bot(options.token, {
      client: { apiRoot: options.apiRoot ?? 'https://api.telegram.org', timeoutSeconds: options.requestTimeoutSeconds ?? 75 },
    });
    this.#drafts = new DraftStreamer({ api: this.#bot.api, logger: this.#logger, intervalMs: options.draftIntervalMs ?? 1_000, format: (text) => toTelegramMessage(text) });
    this.#installHandlers();
    this.routes = options.mode === 'webhook' ? [{ method: 'POST', path: '/telegram/webhook', access: 'public', maxBodyBytes: 1024 * 1024, handle: (request, info) => this.#webhook(request, info.remoteAddress) }] : [];
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
    this.#bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 300 }));
    const me = this.#bot.botInfo;
    this.#logger.info({ botId: me.id, username: me.username, mode: this.#options.mode ?? 'polling' }, 'telegram bot connected');
    this.#businesses = new BusinessConnections(context.state, this.#bot.api, this.#logger);
    this.#deadLetters = new DeadLetters(context.state);
    await registerCommands(this.#bot.api, context.state, me.id, this.#options.agentName ?? me.first_name, this.#logger);

    if (this.#options.mode === 'webhook') {
      if (this.#options.webhookUrl) {
        await this.#bot.api.setWebhook(this.#options.webhookUrl, { secret_token: this.#options.webhookSecret, allowed_updates: [...ALLOWED_UPDATES], max_connections: 40 });
        this.#logger.info({ url: this.#options.webhookUrl }, 'telegram webhook registered');
      }
      return;
    }
    // Long polling and a webhook exclude each other; the pending updates stay.
    await this.#bot.api.deleteWebhook({ drop_pending_updates: false });
    this.#poller = new DurablePoller({
      api: this.#bot.api,
      state: context.state,
      offsetKey: `offset:${me.id}`,
      handle: (update) => this.#receive(update),
      giveUp: (update, failure) => this.#giveUp(update, 'failed', errorText(failure.error), failure.attempts),
      maxAttempts: this.#options.maxUpdateAttempts ?? 3,
      allowedUpdates: ALLOWED_UPDATES,
      logger: this.#logger,
      timeoutSeconds: this.#options.pollTimeoutSeconds ?? 30,
      onFatal: (error) => {
        this.#logger.error({ err: error, code: error.code }, `telegram polling stopped: ${error.message} Replies to messages already accepted are still sent.`);
      },
    });
    await this.#poller.start();
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
          throw new ChannelError('unreachable', this.name, `Telegram's Bot API at ${this.#options.apiRoot ?? 'https://api.telegram.org'} did not answer getMe: ${(error as Error).message}`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000 * attempt));
      }
    }
  }

  /** Stops polling (the webhook answers 503); replies still go out, since the pipeline drains after. Safe twice. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#poller?.stop();
    this.#drafts.close();
  }

  /** Whether long polling is running (false after a 409 Conflict stopped it). */
  get isPolling(): boolean {
    return this.#poller?.isPolling ?? false;
  }

  // ─── outbound ────────────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Sends one part as a Telegram message with entities (plain text when Telegram refuses them).
   * @throws ChannelError `business_connection_disabled` when the business connection was disabled or revoked.
   */
  async send(target: ReplyTarget, text: string): Promise<SentPart> {
    const address = addressOf(target.conversationId);
    const business = await this.#businessFor(address, target);
    await this.#drafts.finish(draftKey(target));
    const other: Record<string, unknown> = {
      ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
      ...(business ? { business_connection_id: business } : {}),
      link_preview_options: { is_disabled: true },
    };
    // In a group the first part quotes the message it answers, so members see whom the bot answers.
    const answered = target.inReplyTo.at(-1);
    if (address.shared && answered !== undefined && !this.#quoted.has(target.correlationId)) {
      other['reply_parameters'] = { message_id: Number(answered), allow_sending_without_reply: true };
    }
    this.#quoted.add(target.correlationId);
    const formatted: TelegramMessage = formatReplyPart(text, (error) => {
      this.#logger.warn({ err: error, correlationId: target.correlationId }, 'markdown could not be turned into telegram entities; sent as plain text');
    });
    try {
      const sent = await this.#bot.api.sendMessage(address.chatId, formatted.text, { ...other, ...(formatted.entities.length > 0 ? { entities: formatted.entities } : {}) });
      return { messageId: String(sent.message_id) };
    } catch (error) {
      if (error instanceof GrammyError && error.error_code === 400 && /entit/i.test(error.description) && formatted.entities.length > 0) {
        this.#logger.warn({ err: error, correlationId: target.correlationId }, 'telegram refused the formatting; the part is sent as plain text');
        const sent = await this.#bot.api.sendMessage(address.chatId, text, other);
        return { messageId: String(sent.message_id) };
      }
      throw await this.#explain(error, address, target);
    }
  }

  async typing(target: ReplyTarget): Promise<void> {
    const address = addressOf(target.conversationId);
    if (address.businessConnectionId !== undefined && !(await this.#usableBusiness(address.businessConnectionId))) return;
    await this.#bot.api.sendChatAction(address.chatId, 'typing', {
      ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
      ...(address.businessConnectionId === undefined ? {} : { business_connection_id: address.businessConnectionId }),
    });
  }

  /** Marks a business chat read up to the last answered message, when the connection has that right. */
  async markRead(target: ReplyTarget): Promise<void> {
    const address = addressOf(target.conversationId);
    const last = target.inReplyTo.at(-1);
    if (address.businessConnectionId === undefined || last === undefined) return;
    const connection = await this.#businesses?.get(address.businessConnectionId);
    if (!connection?.enabled || !connection.canReadMessages) return;
    await this.#bot.api.readBusinessMessage(address.businessConnectionId, address.chatId, Number(last));
  }

  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    const address = addressOf(target.conversationId);
    if (address.businessConnectionId !== undefined) return;
    await this.#bot.api.setMessageReaction(address.chatId, Number(messageId), [{ type: 'emoji', emoji: emoji as 'Ok' & string } as never]);
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    if (!(this.#options.drafts ?? true)) return;
    const address = addressOf(target.conversationId);
    // Drafts exist in private chats only; a business chat is the owner's, not the bot's.
    if (address.shared || address.businessConnectionId !== undefined) return;
    if (event.type === 'text_delta') this.#drafts.append(draftKey(target), { chatId: address.chatId }, event.delta);
    else if (event.type === 'discard') this.#drafts.discard(draftKey(target));
  }

  settle(target: ReplyTarget, _end: TurnEnd): void {
    this.#drafts.forget(draftKey(target));
    this.#quoted.delete(target.correlationId);
  }

  /** The connection id to send through; throws when the connection cannot be used. */
  async #businessFor(address: ChatAddress, target: ReplyTarget): Promise<string | undefined> {
    const id = address.businessConnectionId;
    if (id === undefined) return undefined;
    if (await this.#usableBusiness(id)) return id;
    const error = new ChannelError(
      'business_connection_disabled',
      this.name,
      `The Telegram Business connection ${id} is disabled, revoked or may not reply; the reply to chat ${address.chatId} is not sent.`,
    );
    this.#logger.warn({ businessConnectionId: id, correlationId: target.correlationId }, error.message);
    throw error;
  }

  async #usableBusiness(id: string): Promise<boolean> {
    const connection = await this.#businesses?.get(id);
    return connection !== undefined && connection.enabled && connection.canReply;
  }

  /** A send failure, with a business connection Telegram no longer accepts remembered as disabled. */
  async #explain(error: unknown, address: ChatAddress, target: ReplyTarget): Promise<unknown> {
    if (address.businessConnectionId !== undefined && error instanceof GrammyError && /BUSINESS_CONNECTION|BUSINESS_PEER/i.test(error.description)) {
      await this.#businesses?.disable(address.businessConnectionId);
      this.#logger.warn({ err: error, businessConnectionId: address.businessConnectionId, correlationId: target.correlationId }, 'telegram refused the business connection; it is now treated as disabled');
      return new ChannelError('business_connection_disabled', this.name, `Telegram refused the business connection ${address.businessConnectionId}: ${error.description}`, { cause: error });
    }
    return error;
  }

  // ─── inbound ─────────────────────────────────────────────────────────────────────────────────────────────────

  /** One polled update: a malformed one is kept as a dead letter at once (retrying cannot mend it), others handled. */
  async #receive(update: Update): Promise<void> {
    const problem = malformation(update);
    if (problem !== undefined) return this.#giveUp(update, 'malformed', problem, 0);
    await this.#bot.handleUpdate(update);
  }

  /** Keeps an update as a dead letter, then logs and counts it. @throws when it could not be kept. */
  async #giveUp(update: Update, reason: DeadLetterReason, error: string, attempts: number): Promise<void> {
    await this.#deadLetters?.keep(update.update_id, update, { reason, attempts, error });
    this.#logger.error(
      { updateId: update.update_id, reason, attempts, error },
      `telegram update dropped (${reason === 'malformed' ? 'malformed' : `failed ${attempts} times`}); kept as dead-letter:${update.update_id} in the channel state`,
    );
    this.#options.onDeadLetter?.(reason);
  }

  #installHandlers(): void {
    // One chat's updates in order (a burst must reach the inbox as written); different chats at once.
    this.#bot.use(sequentialize((ctx) => orderKey(ctx.update)));
    this.#bot.on('business_connection', async (ctx) => {
      await this.#businesses?.remember(ctx.update.business_connection!);
    });
    this.#bot.on('message', (ctx) => this.#onMessage(ctx.message));
    this.#bot.on('business_message', (ctx) => this.#onBusinessMessage(ctx.update.business_message!));
    // Errors reach the poller (which retries the update) or the webhook (which answers 500, and Telegram retries).
    this.#bot.catch((error) => {
      throw error.error;
    });
  }

  async #onMessage(message: Message): Promise<void> {
    const from = message.from;
    if (!from || from.is_bot) return;
    const chat = message.chat;
    if (chat.type === 'channel') return;
    const me = this.#bot.botInfo;
    const shared = chat.type === 'group' || chat.type === 'supergroup';
    const address: ChatAddress = {
      chatId: chat.id,
      ...(shared && message.is_topic_message && message.message_thread_id !== undefined ? { threadId: message.message_thread_id } : {}),
      shared,
    };
    const command = commandOf(message, me);
    if (shared && !isAddressedToBot(message, me) && (this.#options.groupAnswer ?? 'mention') === 'mention') return;
    if (command === 'start') return this.#tell(address, personOf(from), 'telegram.greeting');
    if (command === 'reset') return this.#reset(address, personOf(from));
    await this.#handle(message, address);
  }

  async #onBusinessMessage(message: Message & { business_connection_id?: string }): Promise<void> {
    const id = message.business_connection_id;
    const from = message.from;
    if (id === undefined || !from || from.is_bot) return;
    const connection = await this.#businesses?.get(id);
    // The owner writing to their customer is not a message to answer.
    if (!connection || from.id === connection.ownerId) return;
    if (!connection.enabled || !connection.canReply) {
      this.#logger.info({ businessConnectionId: id, chatId: message.chat.id }, 'telegram business message not answered: the connection is disabled or may not reply');
      return;
    }
    await this.#handle(message, { chatId: message.chat.id, businessConnectionId: id, shared: false });
  }

  /** Reads, transcribes and accepts one message; a refusal is told to the person. Storage failures are thrown (retried). */
  async #handle(message: Message, address: ChatAddress): Promise<void> {
    const context = this.#context;
    const from = message.from!;
    if (!context) return;
    let read = readMessage(message, this.#bot.botInfo);
    if (!read) return;
    if (read.audio) {
      const transcript = await this.#transcribe(read, address, personOf(from));
      if (transcript === undefined) return;
      read = { ...read, text: withTranscript(read.text, transcript) };
    }
    const conversationId = conversationIdOf(address);
    const inbound: InboundMessage = {
      channel: this.name,
      accountId: String(from.id),
      displayName: [from.first_name, from.last_name].filter(Boolean).join(' ') || from.username || null,
      conversationId,
      text: read.text,
      messageId: String(message.message_id),
      dedupeKey: `message:${message.message_id}`,
      ...(from.language_code ? { languageHint: from.language_code } : {}),
      conversationKind: address.shared ? 'shared' : 'direct',
      ...(read.phone ? { phone: read.phone } : {}),
    };
    try {
      const acceptance = await context.accept(inbound);
      if (acceptance.status === 'duplicate') this.#logger.debug({ conversationId, messageId: message.message_id }, 'telegram message seen before; not answered again');
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      this.#logger.info({ err: error, conversationId, messageId: message.message_id }, 'telegram message refused');
      const texts: Partial<Record<string, SystemTextKey>> = {
        busy: 'inbox.busy',
        forbidden: 'reset.forbidden',
        inbound_invalid: /long/i.test(error.message) ? 'inbound.tooLong' : 'inbound.unreadable',
        identity_unreachable: 'identity.unavailable',
        identity_unrecognised: 'identity.unrecognised',
      };
      const key = texts[error.code];
      if (key && error.code !== 'forbidden') await this.#tell(address, personOf(from), key);
    }
  }

  /** The transcript of a voice or audio message, or undefined after telling the person it could not be heard. */
  async #transcribe(read: ReadMessage, address: ChatAddress, person: Person): Promise<string | undefined> {
    const audio = read.audio!;
    const result = await transcribeAudio({
      media: audio.media,
      transcribe: this.#options.transcribe,
      download: () => this.#download(audio.fileId),
      languageHint: person.hint,
      maxBytes: MAX_DOWNLOAD_BYTES,
    });
    if (result.status === 'transcribed') return result.text;
    if (result.status === 'failed') this.#logger.warn({ err: result.error, chatId: address.chatId }, 'telegram voice message could not be transcribed; the person was asked to write');
    await this.#tell(address, person, result.notice);
    return undefined;
  }

  /** A file's bytes through the Bot API's file URL. */
  async #download(fileId: string): Promise<Uint8Array> {
    const file = await this.#bot.api.getFile(fileId);
    if (!file.file_path) throw new Error('Telegram gave no file_path for the audio');
    const root = (this.#options.apiRoot ?? 'https://api.telegram.org').replace(/\/+$/, '');
    const response = await fetch(`${root}/file/bot${this.#options.token}/${file.file_path}`, { signal: AbortSignal.timeout(60_000) });
    if (!response.ok) throw new Error(`downloading the audio answered HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  async #reset(address: ChatAddress, person: Person): Promise<void> {
    try {
      await this.#context?.reset(person.accountId, conversationIdOf(address));
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      if (error.code === 'forbidden') return this.#tell(address, person, 'reset.forbidden');
      // not_found: nothing to forget yet; the person still gets the confirmation.
    }
    await this.#tell(address, person, 'reset.done');
  }

  /**
   * A message of the channel's own (greeting, confirmation, refusal), in the person's interface language (their
   * profile's, else Telegram's `language_code`); failures are logged.
   */
  async #tell(address: ChatAddress, person: Person, key: SystemTextKey): Promise<void> {
    const language = (await this.#context?.interfaceLanguage(person.accountId, person.hint).catch(() => undefined)) ?? person.hint;
    try {
      await this.#bot.api.sendMessage(address.chatId, systemText(language, key, { name: this.#options.agentName ?? this.#bot.botInfo.first_name }), {
        ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
        ...(address.businessConnectionId === undefined ? {} : { business_connection_id: address.businessConnectionId }),
      });
    } catch (error) {
      this.#logger.warn({ err: error, chatId: address.chatId, text: key }, 'telegram notice could not be sent');
    }
  }

  /** `POST /telegram/webhook`: the secret checked, the update stored, then 200 (Telegram redelivers anything else). */
  async #webhook(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const expected = this.#options.webhookSecret;
    const given = request.headers.get('x-telegram-bot-api-secret-token');
    if (!expected || given === null || !sameSecret(given, expected)) {
      this.#logger.warn({ remoteAddress, hasHeader: given !== null }, 'telegram webhook request refused: missing or wrong X-Telegram-Bot-Api-Secret-Token');
      return Response.json({ error: { code: 'unauthorized', message: 'Missing or wrong X-Telegram-Bot-Api-Secret-Token.' } }, { status: 401 });
    }
    if (!this.#context || this.#stopped || !this.#bot.isInited()) {
      return Response.json({ error: { code: 'channel_stopped', message: 'The Telegram channel is not accepting updates right now.' } }, { status: 503 });
    }
    let update: Update;
    try {
      update = (await request.json()) as Update;
      if (typeof update !== 'object' || update === null || !Number.isInteger(update.update_id)) throw new Error('no update_id');
    } catch {
      return Response.json({ error: { code: 'invalid_update', message: 'The body is not a Telegram update.' } }, { status: 400 });
    }
    const problem = malformation(update);
    if (problem !== undefined) {
      await this.#giveUp(update, 'malformed', problem, 0).catch((error: unknown) => this.#logger.error({ err: error, updateId: update.update_id }, 'malformed telegram update could not be kept as a dead letter'));
      return Response.json({ error: { code: 'invalid_update', message: `The body is not a Telegram update: ${problem}` } }, { status: 400 });
    }
    try {
      await this.#bot.handleUpdate(update);
      this.#webhookAttempts.delete(update.update_id);
    } catch (error) {
      const attempts = (this.#webhookAttempts.get(update.update_id) ?? 0) + 1;
      if (attempts >= (this.#options.maxUpdateAttempts ?? 3)) {
        try {
          await this.#giveUp(update, 'failed', errorText(error), attempts);
          this.#webhookAttempts.delete(update.update_id);
          // Given up and kept: Telegram must stop delivering it.
          return Response.json({}, { status: 200 });
        } catch (keepError) {
          this.#logger.error({ err: keepError, updateId: update.update_id }, 'telegram update could not be kept as a dead letter either');
        }
      }
      rememberAttempt(this.#webhookAttempts, update.update_id, attempts);
      this.#logger.error({ err: error, updateId: update.update_id, attempts }, 'telegram webhook update could not be stored; Telegram will deliver it again');
      return Response.json({ error: { code: 'not_stored', message: 'The update could not be stored; deliver it again.' } }, { status: 500 });
    }
    return Response.json({}, { status: 200 });
  }
}

/** Updates of one chat (one business chat) are handled in order; others at once. */
function orderKey(update: Update): string | undefined {
  if (update.message) return `chat:${update.message.chat.id}`;
  if (update.business_message) return `business:${update.business_message.business_connection_id}:${update.business_message.chat.id}`;
  if (update.business_connection) return `connection:${update.business_connection.id}`;
  return undefined;
}

/** Remembers a failed delivery's count; the oldest entries go past 1000 (ids Telegram no longer redelivers). */
function rememberAttempt(attempts: Map<number, number>, updateId: number, count: number): void {
  attempts.delete(updateId);
  attempts.set(updateId, count);
  for (const oldest of attempts.keys()) {
    if (attempts.size <= 1_000) break;
    attempts.delete(oldest);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function draftKey(target: ReplyTarget): string {
  return `${target.conversationId}\u0000${target.correlationId}`;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Who a notice of the channel's own goes to: the sender's account and Telegram's guess at their language. */
interface Person {
  readonly accountId: string;
  readonly hint: string | undefined;
}

function personOf(from: { readonly id: number; readonly language_code?: string }): Person {
  return { accountId: String(from.id), hint: from.language_code };
}
