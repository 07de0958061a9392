/**
 * What a Telegram message holds besides text, channel-neutral: the bot maps a Bot API message to it, the user
 * account an MTProto (mtcute) one. Only what the description (or a transcription) needs is carried.
 */
export type TelegramMedia =
  | { readonly kind: 'photo' }
  | { readonly kind: 'sticker'; readonly emoji?: string }
  /** A GIF (an MPEG-4 animation without sound). */
  | { readonly kind: 'animation' }
  | { readonly kind: 'video' }
  /** A round video message ("video note"). */
  | { readonly kind: 'video_note'; readonly fileSize?: number }
  | { readonly kind: 'document'; readonly fileName?: string }
  | { readonly kind: 'voice'; readonly mimeType?: string; readonly fileSize?: number }
  | { readonly kind: 'audio'; readonly title?: string; readonly fileName?: string; readonly mimeType?: string; readonly fileSize?: number }
  | { readonly kind: 'venue'; readonly title: string; readonly address: string }
  | { readonly kind: 'location'; readonly latitude: number; readonly longitude: number }
  | { readonly kind: 'poll'; readonly question: string }
  | { readonly kind: 'dice'; readonly emoji: string; readonly value: number }
  /** A shared contact card; `isSender` when it is the sender's own (the "share my phone" button), not a friend's. */
  | { readonly kind: 'contact'; readonly firstName: string; readonly lastName?: string; readonly phone: string; readonly isSender: boolean }
  | { readonly kind: 'game'; readonly title: string }
  | { readonly kind: 'story' }
  | { readonly kind: 'paid_media' };

/**
 * A medium described to the model by its type: `[photo]`, `[sticker 😀]`, `[document: report.pdf]`,
 * `[location: 52.5, 13.4]`, `[poll: Lunch?]`, … (a contact by its first name; `describeContent` shows a message's own
 * contact in full).
 */
export function describeMedia(media: TelegramMedia): string {
  switch (media.kind) {
    case 'photo':
      return '[photo]';
    case 'sticker':
      return `[sticker${media.emoji ? ` ${media.emoji}` : ''}]`;
    case 'animation':
      return '[GIF]';
    case 'video':
      return '[video]';
    case 'video_note':
      return '[video message]';
    case 'document':
      return `[document${media.fileName ? `: ${media.fileName}` : ''}]`;
    case 'voice':
      return '[voice message]';
    case 'audio':
      return `[audio${media.title ? `: ${media.title}` : ''}]`;
    case 'venue':
      return `[venue: ${media.title}, ${media.address}]`;
    case 'location':
      return `[location: ${media.latitude}, ${media.longitude}]`;
    case 'poll':
      return `[poll: ${media.question}]`;
    case 'dice':
      return `[dice ${media.emoji}: ${media.value}]`;
    case 'contact':
      return `[contact: ${media.firstName}]`;
    case 'game':
      return `[game: ${media.title}]`;
    case 'story':
      return '[story]';
    case 'paid_media':
      return '[paid media]';
  }
}
