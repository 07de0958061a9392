import { GrammyError, type Api } from 'grammy';
import type { ReactionType } from 'grammy/types';
import { ChannelError, ChannelRetryLaterError } from '../../domain/errors.js';
import type { ChannelContext, ReplyTarget, SendOptions, SentPart, TurnEnd, TurnProgress } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { formatReplyPart, telegramReaction } from '../telegram/index.js';
import { TELEGRAM_BOT_CHANNEL, addressOf } from './address.js';
import { approvalKeyboard } from './approvals.js';
import type { BusinessConnections } from './business.js';
import type { DraftStreamer } from './drafts.js';

export interface BotOutboundOptions {
  readonly api: Api;
  /** The Palaver the channel was started in (the person's language for buttons); undefined before `start`. */
  readonly context: () => ChannelContext | undefined;
  readonly businesses: BusinessConnections;
  /** Live drafts in private chats; undefined when drafts are off. */
  readonly drafts: DraftStreamer | undefined;
  readonly logger: Logger;
}

/**
 * Outbound: replies are sent with entities from the Markdown formatter (plain text if Telegram still refuses them),
 * through the business connection where there is one, typing through the same connection, business messages marked
 * read when the connection has that right, reactions outside business chats (the Bot API has no way to react
 * through a connection), and live drafts in private chats. Everything is addressed from the conversation id alone
 * (`address.ts`).
 */
export class BotOutbound {
  readonly #api: Api;
  readonly #context: () => ChannelContext | undefined;
  readonly #businesses: BusinessConnections;
  readonly #drafts: DraftStreamer | undefined;
  readonly #logger: Logger;
  /** Turns whose first part went out (groups quote the message answered on the first part only). */
  readonly #quoted = new Set<string>();
  /** A reaction asked for in a business chat was skipped and logged (once per process, not per turn). */
  #loggedBusinessReaction = false;

  constructor(options: BotOutboundOptions) {
    this.#api = options.api;
    this.#context = options.context;
    this.#businesses = options.businesses;
    this.#drafts = options.drafts;
    this.#logger = options.logger;
  }

  /**
   * Sends one part as a Telegram message with entities (plain text when Telegram refuses them), as a reply to
   * `options.replyTo` when given. A question (`options.approval`) gets Approve / Decline buttons in the person's
   * language, in private chats, groups and business chats alike.
   * @throws ChannelError `business_connection_disabled` when the business connection was disabled or revoked.
   */
  async send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    const address = addressOf(target.conversationId);
    const business = await this.#businesses.replyThrough(address, target.correlationId);
    await this.#drafts?.finish(draftKey(target));
    const other: Record<string, unknown> = {
      ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
      ...(business ? { business_connection_id: business } : {}),
      link_preview_options: { is_disabled: true },
    };
    // A part that answers a given message quotes it; else, in a group, the first part quotes the message it answers,
    // so members see whom the bot answers. A quoted message deleted meanwhile must not cost the part: Telegram then
    // sends it unquoted.
    const asked = messageIdOf(options?.replyTo);
    const answered = messageIdOf(target.inReplyTo.at(-1));
    const quoted = asked ?? (address.shared && !this.#quoted.has(target.correlationId) ? answered : undefined);
    if (quoted !== undefined) other['reply_parameters'] = { message_id: quoted, allow_sending_without_reply: true };
    this.#quoted.add(target.correlationId);
    if (options?.approval) {
      const keyboard = await this.#keyboard(target, options.approval);
      if (keyboard) other['reply_markup'] = keyboard;
    }
    const formatted = formatReplyPart(text, (error) => {
      this.#logger.warn({ err: error, correlationId: target.correlationId }, 'markdown could not be turned into telegram entities; sent as plain text');
    });
    try {
      const sent = await this.#api.sendMessage(address.chatId, formatted.text, {
        ...other,
        ...(formatted.entities.length > 0 ? { entities: formatted.entities } : {}),
      });
      return { messageId: String(sent.message_id) };
    } catch (error) {
      if (error instanceof GrammyError && error.error_code === 400 && /entit/i.test(error.description) && formatted.entities.length > 0) {
        this.#logger.warn({ err: error, correlationId: target.correlationId }, 'telegram refused the formatting; the part is sent as plain text');
        const sent = await this.#api.sendMessage(address.chatId, text, other);
        return { messageId: String(sent.message_id) };
      }
      const retryAfter = error instanceof GrammyError && error.error_code === 429 ? error.parameters.retry_after : undefined;
      // A flood wait longer than auto-retry waits out: the part stays in the outbox until Telegram allows it.
      if (retryAfter !== undefined)
        throw new ChannelRetryLaterError(TELEGRAM_BOT_CHANNEL, retryAfter * 1000, `Telegram asks to wait ${retryAfter} s before sending`, { cause: error });
      throw await this.#businesses.explain(error, address, target.correlationId);
    }
  }

  /** The buttons of a question, in the language of the person it asks (their profile's). */
  async #keyboard(target: ReplyTarget, approval: NonNullable<SendOptions['approval']>): Promise<ReturnType<typeof approvalKeyboard>> {
    const language = await this.#context()
      ?.interfaceLanguage(target.accountId)
      .catch(() => undefined);
    const keyboard = approvalKeyboard(approval, language);
    if (!keyboard)
      this.#logger.error(
        { correlationId: target.correlationId, approvalId: approval.id },
        'approval id does not fit in telegram callback data; the question is sent without buttons',
      );
    return keyboard;
  }

  async typing(target: ReplyTarget): Promise<void> {
    const address = addressOf(target.conversationId);
    if (address.businessConnectionId !== undefined && !(await this.#businesses.canReply(address.businessConnectionId))) return;
    await this.#api.sendChatAction(address.chatId, 'typing', {
      ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
      ...(address.businessConnectionId === undefined ? {} : { business_connection_id: address.businessConnectionId }),
    });
  }

  /** Marks a business chat read up to the last answered message, when the connection has that right. */
  async markRead(target: ReplyTarget): Promise<void> {
    const address = addressOf(target.conversationId);
    const last = target.inReplyTo.at(-1);
    if (address.businessConnectionId === undefined || last === undefined) return;
    if (!(await this.#businesses.canMarkRead(address.businessConnectionId))) return;
    await this.#api.readBusinessMessage(address.businessConnectionId, address.chatId, Number(last));
  }

  /**
   * Sets the bot's reaction on a message (one emoji of Telegram's list, `❤️` and `❤` alike). In a business chat it
   * is skipped and logged once: the Bot API cannot react through a business connection.
   * @throws ChannelError `reaction_refused` for an emoji Telegram does not allow or a message it refuses (deleted,
   *   never there, a service message); the pipeline logs it and the turn goes on.
   */
  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    const address = addressOf(target.conversationId);
    if (address.businessConnectionId !== undefined) {
      if (!this.#loggedBusinessReaction)
        this.#logger.info(
          { correlationId: target.correlationId },
          'a reaction in a Telegram Business chat was skipped: the Bot API cannot react through a business connection',
        );
      this.#loggedBusinessReaction = true;
      return;
    }
    const reaction = telegramReaction(emoji);
    const message = messageIdOf(messageId);
    if (reaction === undefined)
      throw new ChannelError('reaction_refused', TELEGRAM_BOT_CHANNEL, `${emoji} is not one of the emoji Telegram allows as a reaction`);
    if (message === undefined) throw new ChannelError('reaction_refused', TELEGRAM_BOT_CHANNEL, `"${messageId}" is not a Telegram message id`);
    try {
      // grammY types the emoji as a union of Telegram's list; `telegramReaction` returned one of them.
      await this.#api.setMessageReaction(address.chatId, message, [{ type: 'emoji', emoji: reaction as ReactionEmoji }]);
    } catch (error) {
      if (error instanceof GrammyError && error.error_code === 400) {
        throw new ChannelError(
          'reaction_refused',
          TELEGRAM_BOT_CHANNEL,
          `Telegram refused the reaction ${reaction} on message ${message}: ${error.description}`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    if (!this.#drafts) return;
    const address = addressOf(target.conversationId);
    // Drafts exist in private chats only; a business chat is the owner's, not the bot's.
    if (address.shared || address.businessConnectionId !== undefined) return;
    if (event.type === 'text_delta') this.#drafts.append(draftKey(target), { chatId: address.chatId }, event.delta);
    else if (event.type === 'discard') this.#drafts.discard(draftKey(target));
  }

  settle(target: ReplyTarget, _end: TurnEnd): void {
    this.#drafts?.forget(draftKey(target));
    this.#quoted.delete(target.correlationId);
  }

  /** Stops every draft (the channel stops). */
  close(): void {
    this.#drafts?.close();
  }
}

type ReactionEmoji = Extract<ReactionType, { type: 'emoji' }>['emoji'];

/** A Telegram message id from the pipeline's string form; undefined for anything else. */
function messageIdOf(id: string | undefined): number | undefined {
  if (id === undefined || !/^\d{1,15}$/.test(id)) return undefined;
  const value = Number(id);
  return value > 0 ? value : undefined;
}

function draftKey(target: ReplyTarget): string {
  return `${target.conversationId}\u0000${target.correlationId}`;
}
