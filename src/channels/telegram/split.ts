import { splitReply } from '../../runtime/reply.js';
import { TELEGRAM_MAX_MESSAGE_CHARS, type TelegramEntity, type TelegramMessage } from './entities.js';

/**
 * Splits a formatted message into parts of at most `maxChars` UTF-16 units, at the same boundaries as the
 * pipeline's `splitReply` (paragraph, then sentence, then word, else the limit, never inside a surrogate pair).
 * Each part carries the entities that fall into it, shifted to its own offsets; an entity spanning a cut is split
 * in two. Whitespace at the cuts is dropped, so the parts joined with that whitespace give the text back.
 * `maxChars` must be at least 4.
 *
 * Replies need not come here: the pipeline cuts them itself for a channel whose `capabilities.maxMessageChars` is
 * `TELEGRAM_MAX_MESSAGE_CHARS`, at these boundaries, and each part is then formatted (`formatReplyPart`). This is for
 * text formatted whole before it is cut.
 */
export function splitTelegramMessage(message: TelegramMessage, maxChars: number = TELEGRAM_MAX_MESSAGE_CHARS): TelegramMessage[] {
  // Below 4 units the boundary search cannot make progress (and no channel has such a limit).
  if (!Number.isInteger(maxChars) || maxChars < 4) throw new RangeError(`maxChars must be an integer of at least 4, not ${maxChars}.`);
  const { text, entities } = message;
  if (text.length <= maxChars) return [{ text, entities: entities.map((entity) => ({ ...entity })) }];
  const parts: TelegramMessage[] = [];
  let position = 0;
  for (const part of splitReply(text, maxChars)) {
    while (position < text.length && !text.startsWith(part, position)) position += 1;
    const start = position;
    const end = start + part.length;
    const inside: TelegramEntity[] = [];
    for (const entity of entities) {
      const from = Math.max(entity.offset, start);
      const to = Math.min(entity.offset + entity.length, end);
      if (to > from) inside.push({ ...entity, offset: from - start, length: to - from });
    }
    parts.push({ text: part, entities: inside });
    position = end;
  }
  return parts;
}
