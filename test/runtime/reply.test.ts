import { describe, expect, it } from 'vitest';
import { checkReply, splitReply } from '../../src/runtime/reply.js';

const caps = (maxMessageChars: number | null) => ({ maxMessageChars, streaming: false, typing: false, reactions: false, readReceipts: false });

describe('reply step', () => {
  it('refuses empty model output instead of sending it', () => {
    expect(checkReply('  \n ', caps(null))).toEqual({ ok: false, problem: 'the model returned no text' });
  });

  it('sends a reply that fits as one part, trimmed', () => {
    expect(checkReply('  Hello.  ', caps(4096))).toEqual({ ok: true, text: 'Hello.', parts: ['Hello.'] });
  });

  it('splits a 10,000-character reply into parts within the limit that together hold every word', () => {
    const paragraph = (n: number) => Array.from({ length: 30 }, (_, i) => `Sentence ${n}.${i} says something useful about the topic at hand.`).join(' ');
    const text = Array.from({ length: 8 }, (_, n) => paragraph(n))
      .join('\n\n')
      .slice(0, 10_000);
    const parts = splitReply(text, 4096);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.every((part) => part.length <= 4096 && part.length > 0)).toBe(true);
    expect(parts.join(' ').split(/\s+/)).toEqual(text.split(/\s+/));
  });

  it('cuts at a paragraph break before a sentence end, and at a sentence end before a space', () => {
    const first = 'a'.repeat(60);
    expect(splitReply(`${first}\n\nSecond paragraph. It goes on.`, 80)).toEqual([first, 'Second paragraph. It goes on.']);
    const sentences = `${'Short words here. '.repeat(4)}And then a long tail without end`;
    const [head] = splitReply(sentences, 80);
    expect(head!.endsWith('.')).toBe(true);
  });

  it('cuts at a space when a sentence is longer than the limit, and never inside a surrogate pair', () => {
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    const wordParts = splitReply(words, 22);
    expect(wordParts.every((part) => part.length <= 22)).toBe(true);
    expect(wordParts.join(' ')).toBe(words);
    const emoji = '😀'.repeat(10); // 20 UTF-16 units, no spaces
    const parts = splitReply(emoji, 5);
    expect(parts.join('')).toBe(emoji);
    expect(parts.every((part) => part.length <= 5 && !/[\uD800-\uDBFF]$/.test(part))).toBe(true);
  });

  it('makes progress with the smallest limits, and refuses a limit below one', () => {
    for (const max of [1, 2, 3]) {
      const parts = splitReply('Hi. Ok! 😀 yes', max);
      expect(parts.every((part) => part.length <= Math.max(max, 2))).toBe(true);
      expect(parts.join('').replace(/\s/g, '')).toBe('Hi.Ok!😀yes');
    }
    expect(() => splitReply('abc', 0)).toThrow(RangeError);
  });

  it('sends a reply whole on a channel without a limit', () => {
    const long = 'word '.repeat(5_000).trim();
    expect(checkReply(long, caps(null))).toEqual({ ok: true, text: long, parts: [long] });
    expect(() => splitReply('abc', 0)).toThrow('A message limit must be at least 1 character, got 0.');
  });

  it('keeps a remainder of exactly the limit as one part', () => {
    expect(splitReply('12345678 abcd efghi', 10)).toEqual(['12345678', 'abcd efghi']);
  });

  it('never sends an empty part, whatever whitespace surrounds the text', () => {
    expect(splitReply('          hello world', 5)).toEqual(['hello', 'world']);
    expect(splitReply('abcdefghij          ', 10)).toEqual(['abcdefghij']);
  });

  it('takes a break that lies exactly a quarter of the limit in', () => {
    const before = 'a'.repeat(20);
    // Paragraph break at 20 of 80, though a sentence ends later in the window.
    expect(splitReply(`${before}\n\nBb. ${'C'.repeat(74)}`, 80)).toEqual([before, `Bb. ${'C'.repeat(74)}`]);
    // Sentence end at 20 of 80, though a space comes later in the window.
    const sentence = `${'S'.repeat(18)}. `;
    const tail = Array.from({ length: 20 }, () => 'Word').join(' ');
    expect(splitReply(sentence + tail, 80)[0]).toBe(sentence.trim());
    // Space at 20 of 80 rather than a cut through the long word after it.
    expect(splitReply(`${before} ${'b'.repeat(70)}`, 80)).toEqual([before, 'b'.repeat(70)]);
  });

  it('takes a sentence that ends exactly at the limit', () => {
    const text = `First sentence is here. Then one ends now. ${'X'.repeat(50)}`;
    expect(splitReply(text, 43)[0]).toBe('First sentence is here. Then one ends now.');
  });

  it('cuts a word longer than the limit at the limit itself, moving only a split pair to the next part', () => {
    expect(splitReply('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
    // A high surrogate at the limit goes with its pair; a low one at the limit ends its pair in this part.
    expect(splitReply('ab😀cd', 3)).toEqual(['ab', '😀c', 'd']);
    expect(splitReply('a😀bc', 3)).toEqual(['a😀', 'bc']);
    // The first and the last character outside the BMP: the whole range of high surrogates.
    expect(splitReply('ab\u{10000}cd', 3)).toEqual(['ab', '\u{10000}c', 'd']);
    expect(splitReply('ab\u{10FFFF}cd', 3)).toEqual(['ab', '\u{10FFFF}c', 'd']);
  });
});
