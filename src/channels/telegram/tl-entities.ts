import type { tl } from '@mtcute/core';
import type { TelegramEntity } from './entities.js';

/**
 * The formatter's entities as MTProto (TL) message entities, for a user account's `messages.sendMessage` (mtcute's
 * `InputText` takes them with the text). Same offsets and lengths: both count UTF-16 code units. A `pre` without a
 * language gets `''` (the TL field is not optional). Pure.
 *
 * @example
 * toTlEntities([{ type: 'text_link', offset: 0, length: 4, url: 'https://example.com' }]);
 * // [{ _: 'messageEntityTextUrl', offset: 0, length: 4, url: 'https://example.com' }]
 */
export function toTlEntities(entities: readonly TelegramEntity[]): tl.TypeMessageEntity[] {
  return entities.map((entity): tl.TypeMessageEntity => {
    const { offset, length } = entity;
    switch (entity.type) {
      case 'bold':
        return { _: 'messageEntityBold', offset, length };
      case 'italic':
        return { _: 'messageEntityItalic', offset, length };
      case 'underline':
        return { _: 'messageEntityUnderline', offset, length };
      case 'strikethrough':
        return { _: 'messageEntityStrike', offset, length };
      case 'spoiler':
        return { _: 'messageEntitySpoiler', offset, length };
      case 'code':
        return { _: 'messageEntityCode', offset, length };
      case 'blockquote':
        return { _: 'messageEntityBlockquote', offset, length };
      case 'pre':
        return { _: 'messageEntityPre', offset, length, language: entity.language ?? '' };
      case 'text_link':
        return { _: 'messageEntityTextUrl', offset, length, url: entity.url };
    }
  });
}
