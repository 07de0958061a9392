import { describe, expect, it } from 'vitest';
import { MESSAGE_OVERHEAD_TOKENS, estimateTokens } from '../../src/domain/token-estimate.js';

/** Tokens of the text alone, without the per-message framing. */
const textTokens = (content: string, toolCallsJson: string | null = null) => estimateTokens(content, toolCallsJson) - MESSAGE_OVERHEAD_TOKENS;

describe('token estimate', () => {
  it('charges every message its framing, even an empty one', () => {
    expect(MESSAGE_OVERHEAD_TOKENS).toBe(4);
    expect(estimateTokens('')).toBe(4);
  });

  it('counts ASCII at four characters a token and other alphabets at three, rounding up', () => {
    expect(textTokens('abcd'.repeat(10))).toBe(10);
    expect(textTokens('abcde')).toBe(2);
    expect(textTokens('абв'.repeat(10))).toBe(10);
    expect(textTokens('αβγδ')).toBe(2);
    expect(textTokens('é\u007f')).toBe(1); // 4 + 3 twelfths: the last ASCII code is still ASCII
  });

  it('counts an ideograph, a kana, a Hangul syllable and an emoji as a whole token each', () => {
    expect(textTokens('预约')).toBe(2);
    expect(textTokens('カナ')).toBe(2);
    expect(textTokens('한국')).toBe(2);
    expect(textTokens('😀😀')).toBe(2);
    expect(textTokens('\u{10000}\u{10FFFF}')).toBe(2);
    // A lone low surrogate (broken text) costs nothing; a lone high one a token.
    expect(textTokens('\uDC00\uDFFF')).toBe(0);
    expect(textTokens('\uD800')).toBe(1);
  });

  it('gives every wide block a token per character from its first to its last code, and no more outside it', () => {
    const blocks: [number, number][] = [
      [0x1100, 0x11ff],
      [0x2e80, 0x9fff],
      [0xa960, 0xa97f],
      [0xac00, 0xd7ff],
      [0xf900, 0xfaff],
      [0xfe30, 0xfe4f],
      [0xff00, 0xffef],
    ];
    for (const [first, last] of blocks) {
      const label = `U+${first.toString(16)}..U+${last.toString(16)}`;
      expect(textTokens(String.fromCharCode(first, first, first)), label).toBe(3);
      expect(textTokens(String.fromCharCode(last, last, last)), label).toBe(3);
      // The neighbours outside the block are alphabetic: three of them make one token.
      expect(textTokens(String.fromCharCode(first - 1, first - 1, first - 1)), label).toBe(1);
      if (last !== 0xd7ff) expect(textTokens(String.fromCharCode(last + 1, last + 1, last + 1)), label).toBe(1);
    }
  });

  it('adds the tool calls of a message to its text', () => {
    const calls = JSON.stringify([{ id: 'c1', name: 'book', arguments: '{}' }]);
    expect(textTokens('abcd', calls)).toBe(Math.ceil((4 + calls.length) / 4));
    expect(textTokens('', calls)).toBe(Math.ceil(calls.length / 4));
  });
});
