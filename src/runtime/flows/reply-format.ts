import type { ReplyFormat } from '../../domain/ports/flow.js';

/** `instructions` with what the reply's format asks of the model after them (nothing added for a text reply). */
export function withReplyFormat(instructions: string, format: ReplyFormat | undefined): string {
  return format === undefined ? instructions : `${instructions}\n\n${format.instructions}`;
}
