/**
 * A formatting entity as plain data, in the Bot API's shape (`{ type, offset, length }`, `url` on a `text_link`,
 * `language` on a `pre`): what the Markdown formatter makes. The bot hands it to the Bot API as it is; the user
 * account converts it to MTProto's entities with `toTlEntities`. Offsets and lengths count UTF-16 code units.
 */
export type TelegramEntity =
  | { readonly type: 'bold' | 'italic' | 'underline' | 'strikethrough' | 'spoiler' | 'code' | 'blockquote'; readonly offset: number; readonly length: number }
  | { readonly type: 'pre'; readonly offset: number; readonly length: number; readonly language?: string }
  | { readonly type: 'text_link'; readonly offset: number; readonly length: number; readonly url: string };

/** A text message as Telegram takes it: plain text and the entities that format it (no parse mode). */
export interface TelegramMessage {
  readonly text: string;
  readonly entities: TelegramEntity[];
}

/** Telegram's limit for one text message, in UTF-16 code units (the same for bots and user accounts). */
export const TELEGRAM_MAX_MESSAGE_CHARS = 4096;
