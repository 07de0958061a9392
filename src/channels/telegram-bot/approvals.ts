import type { Api } from 'grammy';
import type { CallbackQuery, InlineKeyboardMarkup, MessageEntity } from 'grammy/types';
import type { ApprovalDecision, DeliveryApproval } from '../../domain/approval.js';
import type { ApprovalOutcome, ChannelContext } from '../../domain/ports/channel.js';
import { systemText, type SystemTextKey } from '../../i18n/index.js';
import type { Logger } from '../../observability/logger.js';

/** Telegram's limit on a button's `callback_data`, in bytes. */
const MAX_CALLBACK_DATA_BYTES = 64;
/** `apv:<approval id>:a` (approve) or `:d` (decline); the id is Palaver's (a UUID), nothing else. */
const CALLBACK_DATA = /^apv:([A-Za-z0-9-]{1,58}):([ad])$/;

/** The callback data of one button of a question. */
export function approvalCallbackData(approvalId: string, decision: ApprovalDecision): string {
  return `apv:${approvalId}:${decision === 'approved' ? 'a' : 'd'}`;
}

/** What a button's data asks: the request and the decision; undefined for data that is not a well-formed approval button's. */
export function readApprovalCallbackData(data: string | undefined): { readonly approvalId: string; readonly decision: ApprovalDecision } | undefined {
  const match = data === undefined ? null : CALLBACK_DATA.exec(data);
  if (!match) return undefined;
  return { approvalId: match[1]!, decision: match[2] === 'a' ? 'approved' : 'declined' };
}

/**
 * The Approve / Decline buttons under a question, in `language`; undefined when the id would not fit Telegram's
 * 64 bytes of callback data (Palaver's ids are UUIDs, so only a foreign id can).
 */
export function approvalKeyboard(approval: DeliveryApproval, language: string | undefined): InlineKeyboardMarkup | undefined {
  const approve = approvalCallbackData(approval.id, 'approved');
  const decline = approvalCallbackData(approval.id, 'declined');
  if (readApprovalCallbackData(approve) === undefined || Buffer.byteLength(approve) > MAX_CALLBACK_DATA_BYTES) return undefined;
  return {
    inline_keyboard: [
      [
        { text: systemText(language, 'approval.approve'), callback_data: approve },
        { text: systemText(language, 'approval.decline'), callback_data: decline },
      ],
    ],
  };
}

/** What the presser is told (the callback's answer), and whether as an alert they must dismiss. */
function answerOf(outcome: ApprovalOutcome): { readonly key: SystemTextKey; readonly alert: boolean } {
  switch (outcome.kind) {
    case 'decided':
      return { key: outcome.status === 'approved' ? 'approval.approved' : 'approval.declined', alert: false };
    case 'already':
      return { key: 'approval.alreadyDecided', alert: false };
    case 'expired':
      return { key: 'approval.expired', alert: false };
    case 'refused':
      return outcome.reason === 'not_yours' ? { key: 'approval.notYours', alert: true } : { key: 'approval.byOperator', alert: false };
    case 'not_found':
      return { key: 'approval.unknown', alert: false };
  }
}

/** The line the question gets once it is settled (decided now or before, or out of time); undefined while it is open. */
function settledLine(outcome: ApprovalOutcome): SystemTextKey | undefined {
  if (outcome.kind === 'expired') return 'approval.expired';
  if (outcome.kind !== 'decided' && outcome.kind !== 'already') return undefined;
  return outcome.status === 'approved' ? 'approval.approved' : outcome.status === 'declined' ? 'approval.declined' : 'approval.expired';
}

export interface ApprovalButtonsOptions {
  readonly api: Api;
  readonly context: () => ChannelContext | undefined;
  readonly logger: Logger;
}

/**
 * Presses of Approve / Decline (`callback_query` with `apv:` data). The decision is taken for the account Telegram
 * says pressed (`from.id`, verified by Telegram: the bot's own update), never for anything in the data, which only
 * names the request and the answer; the core checks that this account is the one asked. The presser is told what
 * came of it, and a settled question is edited to show the decision, its buttons removed.
 */
export class ApprovalButtons {
  readonly #options: ApprovalButtonsOptions;

  constructor(options: ApprovalButtonsOptions) {
    this.#options = options;
  }

  /** Whether a callback is an approval button's (its data starts with `apv:`); others are not this class's. */
  static owns(query: CallbackQuery): boolean {
    return query.data?.startsWith('apv:') === true;
  }

  /**
   * Handles one press. @throws when the decision could not be taken (the store failed): the update is retried, and a
   * decision that did go through is then reported as already taken.
   */
  async press(query: CallbackQuery): Promise<void> {
    const context = this.#options.context();
    if (!context) return;
    const accountId = String(query.from.id);
    const language = await context.interfaceLanguage(accountId, query.from.language_code).catch(() => query.from.language_code);
    const asked = readApprovalCallbackData(query.data);
    const outcome: ApprovalOutcome = asked === undefined ? { kind: 'not_found' } : await context.decideApproval(accountId, asked.approvalId, asked.decision);
    if (asked === undefined)
      this.#options.logger.warn({ accountId, data: query.data?.slice(0, 64) }, 'telegram approval button with malformed data; nothing decided');
    else this.#options.logger.info({ accountId, approvalId: asked.approvalId, outcome: outcome.kind }, 'telegram approval button pressed');
    const answer = answerOf(outcome);
    await this.#options.api
      .answerCallbackQuery(query.id, { text: systemText(language, answer.key), ...(answer.alert ? { show_alert: true } : {}) })
      .catch((error: unknown) => this.#options.logger.warn({ err: error, accountId }, 'telegram approval press could not be answered'));
    const line = settledLine(outcome);
    if (line !== undefined) await this.#settle(query, systemText(language, line));
  }

  /** The question shows how it was settled and loses its buttons; a failure is logged (the decision stands). */
  async #settle(query: CallbackQuery, line: string): Promise<void> {
    const message = query.message;
    if (message === undefined) return;
    const chatId = message.chat.id;
    const business = 'business_connection_id' in message && typeof message.business_connection_id === 'string' ? message.business_connection_id : undefined;
    const through = business === undefined ? {} : { business_connection_id: business };
    // An inaccessible message (older than 48 hours, or deleted) comes with date 0 and no text.
    const text = message.date !== 0 && 'text' in message && typeof message.text === 'string' ? message.text : undefined;
    const entities = text !== undefined && 'entities' in message ? (message.entities as MessageEntity[] | undefined) : undefined;
    try {
      if (text !== undefined && text.length + line.length + 2 <= 4096) {
        await this.#options.api.editMessageText(chatId, message.message_id, `${text}\n\n${line}`, {
          ...through,
          ...(entities && entities.length > 0 ? { entities } : {}),
          link_preview_options: { is_disabled: true },
        });
        return;
      }
      await this.#options.api.editMessageReplyMarkup(chatId, message.message_id, through);
    } catch (error) {
      this.#options.logger.warn({ err: error, chatId, messageId: message.message_id }, 'telegram approval question could not be edited to show the decision');
    }
  }
}
