import { describe, expect, it } from 'vitest';
import { isReactionEmoji } from '../../src/channels/shared/reaction-emoji.js';

describe('isReactionEmoji', () => {
  it('takes one emoji, with its skin tone, joiners, selectors, a flag or a keycap', () => {
    for (const emoji of ['👍', '❤️', '❤', '👍🏽', '👨‍👩‍👧‍👦', '🇨🇭', '1️⃣', '🔥', '🏴󠁧󠁢󠁳󠁣󠁴󠁿']) expect(isReactionEmoji(emoji), emoji).toBe(true);
  });

  it('refuses words, markup, control characters, digits, two emoji and padding', () => {
    for (const text of ['', 'ok', '<b>', '👍<', '1', '#', '👍👍', ' 👍', '👍\n', '\u001b[2J', '\u200d', '🔥'.repeat(9)])
      expect(isReactionEmoji(text), JSON.stringify(text)).toBe(false);
  });
});
