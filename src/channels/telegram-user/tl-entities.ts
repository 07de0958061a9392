import type { tl } from '@mtcute/node';
import type { MessageEntity } from '../telegram-bot/format.js';

/**
 * The bot formatter's Bot API entities as MTProto TL entities. Temporary: the shared `src/channels/telegram/`
 * module (with its own `toTlEntities()`) replaces this file when it lands. Offsets are UTF-16 units in both.
 * Entity kinds MTProto has no plain equivalent for (a `text_mention` without a resolvable user) are dropped.
 */
export function toTlEntities(entities: readonly MessageEntity[]): tl.TypeMessageEntity[] {
  const out: tl.TypeMessageEntity[] = [];
  for (const entity of entities) {
    const { offset, length } = entity;
    switch (entity.type) {
      case 'bold':
        out.push({ _: 'messageEntityBold', offset, length });
        break;
      case 'italic':
        out.push({ _: 'messageEntityItalic', offset, length });
        break;
      case 'underline':
        out.push({ _: 'messageEntityUnderline', offset, length });
        break;
      case 'strikethrough':
        out.push({ _: 'messageEntityStrike', offset, length });
        break;
      case 'spoiler':
        out.push({ _: 'messageEntitySpoiler', offset, length });
        break;
      case 'code':
        out.push({ _: 'messageEntityCode', offset, length });
        break;
      case 'pre':
        out.push({ _: 'messageEntityPre', offset, length, language: entity.language ?? '' });
        break;
      case 'text_link':
        out.push({ _: 'messageEntityTextUrl', offset, length, url: entity.url });
        break;
      case 'blockquote':
        out.push({ _: 'messageEntityBlockquote', offset, length });
        break;
      case 'expandable_blockquote':
        out.push({ _: 'messageEntityBlockquote', offset, length, collapsed: true });
        break;
      case 'url':
        out.push({ _: 'messageEntityUrl', offset, length });
        break;
      default:
        break;
    }
  }
  return out;
}
