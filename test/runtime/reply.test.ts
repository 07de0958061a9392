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
    const text = Array.from({ length: 8 }, (_, n) => paragraph(n)).join('\n\n').slice(0, 10_000);
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
});
