import { ChannelError } from '../../domain/errors.js';
import type { InboundMessage } from '../../domain/ports/channel.js';
import { unstorableReason } from '../../domain/storable-text.js';

/** Refuses a message whose text or ids a database cannot store exactly, on every back end. */
export function checkStorable(message: InboundMessage, text: string): void {
  const fields: [string, string | null | undefined][] = [
    ['text', text],
    ['account id', message.accountId],
    ['conversation id', message.conversationId],
    ['message id', message.messageId],
    ['dedupe key', message.dedupeKey],
    ['display name', message.displayName],
    ['language hint', message.languageHint],
    ['correlation id', message.correlationId],
    ...(message.attachments ?? []).map((file): [string, string] => ['file name', file.name]),
  ];
  for (const [name, value] of fields) {
    if (value !== undefined && value !== null && unstorableReason(value) !== undefined) {
      throw new ChannelError('inbound_invalid', message.channel, `The ${name} holds a NUL character or a broken unicode surrogate; send plain text.`);
    }
  }
}
