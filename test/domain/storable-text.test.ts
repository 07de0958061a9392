import { describe, expect, it } from 'vitest';
import { toStorableJsonText, toStorableText, unstorableReason } from '../../src/domain/storable-text.js';

describe('storable text', () => {
  it('names what a back end cannot store', () => {
    expect(unstorableReason('a\u0000b')).toBe('nul');
    expect(unstorableReason('a\uD800b')).toBe('lone_surrogate');
    expect(unstorableReason('b\uDC00')).toBe('lone_surrogate');
    expect(unstorableReason('ok 😀')).toBeUndefined();
  });

  it('drops NUL from text a person reads, replaces it in data, and replaces lone surrogates in both', () => {
    expect(toStorableText('a\u0000b \uD800 😀 \uDC00', 'drop')).toBe('ab \uFFFD 😀 \uFFFD');
    expect(toStorableText('a\u0000b', 'replace')).toBe('a\uFFFDb');
    const fine = 'nothing to do 😀';
    expect(toStorableText(fine, 'drop')).toBe(fine);
  });

  it('replaces NUL and lone-surrogate escapes in JSON text, keeping pairs, escaped backslashes and invalid JSON', () => {
    expect(JSON.parse(toStorableJsonText('{"a":"x\\u0000y"}'))).toEqual({ a: 'x\uFFFDy' });
    expect(JSON.parse(toStorableJsonText('{"a":"\\ud83d\\ude00 \\ud83d \\ude00"}'))).toEqual({ a: '😀 \uFFFD \uFFFD' });
    // An escaped backslash followed by "u0000" is six plain characters, not an escape.
    expect(toStorableJsonText('{"a":"\\\\u0000"}')).toBe('{"a":"\\\\u0000"}');
    expect(toStorableJsonText('{not json \u0000 \\u0000')).toBe('{not json \uFFFD \\ufffd');
    const fine = '{"a": [1, 2.50, "é"]}';
    expect(toStorableJsonText(fine)).toBe(fine);
  });
});
