import type { Api } from 'grammy';
import type { ChannelContext } from '../../domain/ports/channel.js';
import { systemText, type SystemTextKey } from '../../i18n/index.js';
import type { Logger } from '../../observability/logger.js';
import type { ChatAddress } from './address.js';

/** Who a notice of the channel's own goes to: the sender's account and Telegram's guess at their language. */
export interface Person {
  readonly accountId: string;
  readonly hint: string | undefined;
}

export function personOf(from: { readonly id: number; readonly language_code?: string }): Person {
  return { accountId: String(from.id), hint: from.language_code };
}

/**
 * Messages of the channel's own (greeting, confirmation, refusal), in the person's interface language: their
 * profile's, else Telegram's `language_code`. Sent outside the pipeline and not stored; a failure is logged.
 */
export class Notices {
  readonly #api: Api;
  readonly #context: () => ChannelContext | undefined;
  readonly #agentName: () => string;
  readonly #logger: Logger;

  constructor(options: { readonly api: Api; readonly context: () => ChannelContext | undefined; readonly agentName: () => string; readonly logger: Logger }) {
    this.#api = options.api;
    this.#context = options.context;
    this.#agentName = options.agentName;
    this.#logger = options.logger;
  }

  async tell(address: ChatAddress, person: Person, key: SystemTextKey): Promise<void> {
    const language =
      (await this.#context()
        ?.interfaceLanguage(person.accountId, person.hint)
        .catch(() => undefined)) ?? person.hint;
    try {
      await this.#api.sendMessage(address.chatId, systemText(language, key, { name: this.#agentName() }), {
        ...(address.threadId === undefined ? {} : { message_thread_id: address.threadId }),
        ...(address.businessConnectionId === undefined ? {} : { business_connection_id: address.businessConnectionId }),
      });
    } catch (error) {
      this.#logger.warn({ err: error, chatId: address.chatId, text: key }, 'telegram notice could not be sent');
    }
  }
}
