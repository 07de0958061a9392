import { describe, expect, it } from 'vitest';
import { handoffPhraseIn, handoffPhraseSet } from '../../src/runtime/handoff/handoff-phrases.js';

describe('handoff phrases', () => {
  const phrases = handoffPhraseSet(['operator', 'живой человек', '人工客服', '  Operator ', 'オペレーター', 'a.b']);

  it('match as whole words in any case and script, with any white space between their words', () => {
    expect(handoffPhraseIn('I need an OPERATOR now', phrases)).toBe('operator');
    expect(handoffPhraseIn('operator?', phrases)).toBe('operator');
    expect(handoffPhraseIn('Дайте ЖИВОЙ\n  человек, пожалуйста', phrases)).toBe('живой человек');
    expect(handoffPhraseIn('«живой человек»', phrases)).toBe('живой человек');
  });

  it('do not match inside a longer word, in any script', () => {
    expect(handoffPhraseIn('I am a cooperator', phrases)).toBeUndefined();
    expect(handoffPhraseIn('operators', phrases)).toBeUndefined();
    expect(handoffPhraseIn('живой человечек', phrases)).toBeUndefined();
    // A dot in a phrase is a dot, not any character.
    expect(handoffPhraseIn('axb', phrases)).toBeUndefined();
    expect(handoffPhraseIn('see a.b here', phrases)).toBe('a.b');
  });

  it('match a phrase of a script written without spaces anywhere in the message', () => {
    expect(handoffPhraseIn('我要人工客服谢谢', phrases)).toBe('人工客服');
    expect(handoffPhraseIn('オペレーターをお願いします', phrases)).toBe('オペレーター');
  });

  it('keep one of phrases that differ only in case or spaces, and match none when there are none', () => {
    expect(phrases.map((phrase) => phrase.phrase)).toEqual(['operator', 'живой человек', '人工客服', 'オペレーター', 'a.b']);
    expect(handoffPhraseIn('operator', [])).toBeUndefined();
  });
});
