import { sequentialize } from '@grammyjs/runner';
import type { Bot } from 'grammy';
import type { CallbackQuery, Message, Update } from 'grammy/types';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelContext, InboundMessage } from '../../domain/ports/channel.js';
import type { SystemTextKey } from '../../i18n/index.js';
import type { Logger } from '../../observability/logger.js';
import { withTranscript } from '../telegram/index.js';
import { conversationIdOf, TELEGRAM_BOT_CHANNEL, type ChatAddress } from './address.js';
import { ApprovalButtons } from './approvals.js';
import type { BusinessConnections } from './business.js';
import { DeadLetters, type DeadLetterReason } from './dead-letters.js';
import { commandOf, isAddressedToBot, readMessage } from './inbound.js';
import { personOf, type Notices, type Person } from './notices.js';
import { malformation } from './update-shape.js';
import type { BotVoice } from './voice.js';

export interface BotUpdatesOptions {
  readonly bot: Bot;
  /** The Palaver the channel was started in; undefined before `start` (nothing is accepted then). */
  readonly context: () => ChannelContext | undefined;
  readonly businesses: BusinessConnections;
  readonly notices: Notices;
  readonly voice: BotVoice;
  /** Presses of the Approve / Decline buttons under a question. */
  readonly approvals: ApprovalButtons;
  /** `mention`: group messages are answered only when addressed to the bot; `all`: every one. */
  readonly groupAnswer: 'mention' | 'all';
  /** Chats that are no conversation (the operators' chat, where the bot only posts notices): their messages are ignored. */
  readonly ignoredChats?: ReadonlySet<string>;
  readonly logger: Logger;
  /** Called for each update given up (after it is kept as a dead letter). */
  readonly onDeadLetter?: ((reason: DeadLetterReason) => void) | undefined;
}

/** The refusals of `accept` a person is told of, by error code. */
const REFUSAL_TEXTS: Partial<Record<string, (error: ChannelError) => SystemTextKey>> = {
  busy: () => 'inbox.busy',
  inbound_invalid: (error) => (/long/i.test(error.message) ? 'inbound.tooLong' : 'inbound.unreadable'),
  identity_unreachable: () => 'identity.unavailable',
  identity_unrecognised: () => 'identity.unrecognised',
};

/**
 * Inbound: Telegram updates, polled or posted to the webhook, become `InboundMessage`s. Each message is one
 * `accept` (dedupe key: the chat's message id); a storage failure is thrown, so the update is retried and then kept
 * as a dead letter. Each chat's updates are handled in order (`sequentialize`), different chats at once. In groups
 * only messages addressed to the bot are answered (unless `groupAnswer` is `all`); business messages only a
 * customer's through a connection that may reply. Voice and audio are transcribed before `accept`. `/start` greets
 * and `/reset` starts the conversation afresh, both answered by the channel itself, as are refusals. A press of an
 * approval's button (`callback_query`) is decided for the presser (`approvals.ts`).
 */
export class BotUpdates {
  readonly #options: BotUpdatesOptions;
  #deadLetters: DeadLetters | undefined;

  constructor(options: BotUpdatesOptions) {
    this.#options = options;
    this.#install(options.bot);
  }

  /** One polled update: a malformed one is kept as a dead letter at once (retrying cannot mend it), others handled. */
  async receive(update: Update): Promise<void> {
    const problem = malformation(update);
    if (problem !== undefined) return this.giveUp(update, 'malformed', problem, 0);
    await this.handle(update);
  }

  /** Handles one well-formed update. @throws when its message could not be stored (the update is to be retried). */
  async handle(update: Update): Promise<void> {
    await this.#options.bot.handleUpdate(update);
  }

  /** Keeps an update as a dead letter, then logs and counts it. @throws when it could not be kept. */
  async giveUp(update: Update, reason: DeadLetterReason, error: unknown, attempts: number): Promise<void> {
    const text = errorText(error);
    const state = this.#options.context()?.state;
    if (state) {
      this.#deadLetters ??= new DeadLetters(state);
      await this.#deadLetters.keep(update.update_id, update, { reason, attempts, error: text });
    }
    this.#options.logger.error(
      { updateId: update.update_id, reason, attempts, error: text },
      `telegram update dropped (${reason === 'malformed' ? 'malformed' : `failed ${attempts} times`}); kept as dead-letter:${update.update_id} in the channel state`,
    );
    this.#options.onDeadLetter?.(reason);
  }

  #install(bot: Bot): void {
    // One chat's updates in order (a burst must reach the inbox as written); different chats at once.
    bot.use(sequentialize((ctx) => orderKey(ctx.update)));
    bot.on('business_connection', async (ctx) => {
      await this.#options.businesses.remember(ctx.update.business_connection!);
    });
    bot.on('message', (ctx) => this.#onMessage(ctx.message));
    bot.on('business_message', (ctx) => this.#onBusinessMessage(ctx.update.business_message!));
    bot.on('callback_query', (ctx) => this.#onCallbackQuery(ctx.callbackQuery));
    // Errors reach the poller (which retries the update) or the webhook (which answers 500, and Telegram retries).
    bot.catch((error) => {
      throw error.error;
    });
  }

  async #onMessage(message: Message): Promise<void> {
    const from = message.from;
    if (!from || from.is_bot) return;
    const chat = message.chat;
    if (chat.type === 'channel') return;
    // Operators reply to a notice in their chat, or mention the bot there: talk among people, never the agent's turn.
    if (this.#options.ignoredChats?.has(String(chat.id))) return;
    const me = this.#options.bot.botInfo;
    const shared = chat.type === 'group' || chat.type === 'supergroup';
    const address: ChatAddress = {
      chatId: chat.id,
      ...(shared && message.is_topic_message && message.message_thread_id !== undefined ? { threadId: message.message_thread_id } : {}),
      shared,
    };
    const command = commandOf(message, me);
    if (shared && !isAddressedToBot(message, me) && this.#options.groupAnswer === 'mention') return;
    if (command === 'start') return this.#options.notices.tell(address, personOf(from), 'telegram.greeting');
    if (command === 'reset') return this.#reset(address, personOf(from));
    await this.#accept(message, address);
  }

  async #onBusinessMessage(message: Message & { business_connection_id?: string }): Promise<void> {
    const id = message.business_connection_id;
    const from = message.from;
    if (id === undefined || !from || from.is_bot) return;
    if (!(await this.#options.businesses.answers(id, { fromId: from.id, chatId: message.chat.id }))) return;
    await this.#accept(message, { chatId: message.chat.id, businessConnectionId: id, shared: false });
  }

  /** A button pressed: an approval's is decided; any other is only answered, so the person's client stops waiting. */
  async #onCallbackQuery(query: CallbackQuery): Promise<void> {
    if (ApprovalButtons.owns(query)) return this.#options.approvals.press(query);
    await this.#options.bot.api
      .answerCallbackQuery(query.id)
      .catch((error: unknown) => this.#options.logger.debug({ err: error }, 'telegram callback query could not be answered'));
  }

  /** Reads, transcribes and accepts one message; a refusal is told to the person. Storage failures are thrown (retried). */
  async #accept(message: Message, address: ChatAddress): Promise<void> {
    const context = this.#options.context();
    const from = message.from!;
    if (!context) return;
    let read = readMessage(message, this.#options.bot.botInfo);
    if (!read) return;
    if (read.audio) {
      const transcript = await this.#options.voice.transcribe(read.audio, address, personOf(from));
      if (transcript === undefined) return;
      read = { ...read, text: withTranscript(read.text, transcript) };
    }
    const conversationId = conversationIdOf(address);
    const inbound: InboundMessage = {
      channel: TELEGRAM_BOT_CHANNEL,
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
      if (acceptance.status === 'duplicate')
        this.#options.logger.debug({ conversationId, messageId: message.message_id }, 'telegram message seen before; not answered again');
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      this.#options.logger.info({ err: error, conversationId, messageId: message.message_id }, 'telegram message refused');
      const key = REFUSAL_TEXTS[error.code]?.(error);
      if (key) await this.#options.notices.tell(address, personOf(from), key);
    }
  }

  async #reset(address: ChatAddress, person: Person): Promise<void> {
    try {
      await this.#options.context()?.reset(person.accountId, conversationIdOf(address));
    } catch (error) {
      if (!(error instanceof ChannelError)) throw error;
      if (error.code === 'forbidden') return this.#options.notices.tell(address, person, 'reset.forbidden');
      // not_found: nothing to forget yet; the person still gets the confirmation.
    }
    await this.#options.notices.tell(address, person, 'reset.done');
  }
}

/** Updates of one chat (one business chat) are handled in order; others at once. */
function orderKey(update: Update): string | undefined {
  if (update.message) return `chat:${update.message.chat.id}`;
  if (update.business_message) return `business:${update.business_message.business_connection_id}:${update.business_message.chat.id}`;
  if (update.business_connection) return `connection:${update.business_connection.id}`;
  const pressed = update.callback_query?.message;
  if (pressed) {
    const business = 'business_connection_id' in pressed ? pressed.business_connection_id : undefined;
    return typeof business === 'string' ? `business:${business}:${pressed.chat.id}` : `chat:${pressed.chat.id}`;
  }
  return undefined;
}

function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
