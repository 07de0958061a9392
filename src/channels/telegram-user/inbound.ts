import type { Message, User } from '@mtcute/node';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelContext } from '../../domain/ports/channel.js';
import type { SystemTextKey } from '../../i18n/index.js';
import type { Logger } from '../../observability/logger.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';

/**
 * PLACEHOLDER until h6's inbound lands (same function name and environment): text of private chats from people
 * only. The owner's own messages, bots, Telegram's service account, service messages, groups and media are ignored.
 */
export interface InboundEnvironment {
  readonly context: ChannelContext;
  /** The signed-in account. */
  readonly self: User;
  readonly logger: Logger;
  /** Sends the person one of Palaver's own texts (a refusal), in their interface language. */
  readonly notify: (chatId: number, accountId: string, key: SystemTextKey) => Promise<void>;
}

export type InboundOutcome = 'accepted' | 'duplicate' | 'recorded' | 'ignored';

const SERVICE_USER_ID = 777000;

/** What the person is told when the pipeline refuses their message (as the bot does); `forbidden` is not told. */
const REFUSAL_TEXTS: Partial<Record<string, (message: string) => SystemTextKey>> = {
  busy: () => 'inbox.busy',
  inbound_invalid: (message) => (/long/i.test(message) ? 'inbound.tooLong' : 'inbound.unreadable'),
  identity_unreachable: () => 'identity.unavailable',
  identity_unrecognised: () => 'identity.unrecognised',
};

/** Hands one new message to the pipeline (or not); resolves once it is stored, so the update may be acknowledged. */
export async function handleIncomingMessage(message: Message, env: InboundEnvironment): Promise<InboundOutcome> {
  const chat = message.chat;
  const sender = message.sender;
  if (chat.type !== 'user' || sender.type !== 'user') return 'ignored';
  if (message.isOutgoing || message.isService || sender.id === env.self.id || sender.isBot || sender.id === SERVICE_USER_ID) return 'ignored';
  const text = message.text.trim();
  if (text === '') return 'ignored';
  try {
    const acceptance = await env.context.accept({
      channel: TELEGRAM_USER_CHANNEL,
      accountId: String(sender.id),
      displayName: sender.displayName,
      conversationId: String(chat.id),
      text,
      messageId: String(message.id),
      dedupeKey: `${TELEGRAM_USER_CHANNEL}:${chat.id}:${message.id}`,
    });
    return acceptance.status;
  } catch (error) {
    // A message the pipeline refuses (too long, not this person's conversation) is skipped, not retried forever.
    if (error instanceof ChannelError) {
      env.logger.info({ err: error, chatId: chat.id, messageId: message.id }, 'telegram user-account message refused');
      const key = REFUSAL_TEXTS[error.code]?.(error.message);
      if (key) await env.notify(chat.id, String(sender.id), key);
      return 'ignored';
    }
    throw error;
  }
}
