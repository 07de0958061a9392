/**
 * The emoji Telegram accepts as a standard reaction: the Bot API's `ReactionTypeEmoji` list, written exactly as
 * Telegram spells them (several without the U+FE0F variation selector, e.g. `❤`, `✍`, `🤷‍♂`). A bot may only set
 * these; a user account without Premium the same (custom emoji need Premium or the chat's leave). Shared by the bot
 * and the user account.
 */
export const TELEGRAM_REACTION_EMOJI: readonly string[] = [
  '👍',
  '👎',
  '❤',
  '🔥',
  '🥰',
  '👏',
  '😁',
  '🤔',
  '🤯',
  '😱',
  '🤬',
  '😢',
  '🎉',
  '🤩',
  '🤮',
  '💩',
  '🙏',
  '👌',
  '🕊',
  '🤡',
  '🥱',
  '🥴',
  '😍',
  '🐳',
  '❤‍🔥',
  '🌚',
  '🌭',
  '💯',
  '🤣',
  '⚡',
  '🍌',
  '🏆',
  '💔',
  '🤨',
  '😐',
  '🍓',
  '🍾',
  '💋',
  '🖕',
  '😈',
  '😴',
  '😭',
  '🤓',
  '👻',
  '👨‍💻',
  '👀',
  '🎃',
  '🙈',
  '😇',
  '😨',
  '🤝',
  '✍',
  '🤗',
  '🫡',
  '🎅',
  '🎄',
  '☃',
  '💅',
  '🤪',
  '🗿',
  '🆒',
  '💘',
  '🙉',
  '🦄',
  '😘',
  '💊',
  '🙊',
  '😎',
  '👾',
  '🤷‍♂',
  '🤷',
  '🤷‍♀',
  '😡',
];

const VARIATION_SELECTOR = /\uFE0F/g;
const ALLOWED = new Set(TELEGRAM_REACTION_EMOJI);

/**
 * Adds U+FE0F after each character that is usually written with it: those whose default presentation is text
 * (☃ ✍ ❤ 🕊 ♀ ♂, per Unicode's emoji data), and ⚡, which keyboards and models write as `⚡️` as often as not.
 */
function fullyQualified(emoji: string): string {
  return [...emoji].map((char) => (WRITTEN_WITH_SELECTOR.has(char) ? `${char}\uFE0F` : char)).join('');
}

const WRITTEN_WITH_SELECTOR = new Set(['☃', '✍', '❤', '🕊', '♀', '♂', '⚡']);

/**
 * The reaction emoji a Telegram channel reports in `capabilities.reactionEmoji`: Telegram's list, plus each one as a
 * model usually writes it, with U+FE0F after the characters that take it (`❤️`, `✍️`, `❤️‍🔥`, `🤷‍♂️`, `⚡️`). Both
 * spellings of a heart are one reaction; `telegramReaction` turns either into Telegram's.
 */
export const TELEGRAM_REACTION_EMOJI_ACCEPTED: readonly string[] = [...new Set(TELEGRAM_REACTION_EMOJI.flatMap((emoji) => [emoji, fullyQualified(emoji)]))];

/** Telegram's spelling of a reaction emoji (without U+FE0F), or undefined when Telegram does not allow it. */
export function telegramReaction(emoji: string): string | undefined {
  const bare = emoji.replace(VARIATION_SELECTOR, '');
  return ALLOWED.has(bare) ? bare : undefined;
}
