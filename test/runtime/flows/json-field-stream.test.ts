import { describe, expect, it } from 'vitest';
import { JsonStringFieldStream } from '../../../src/runtime/flows/json-field-stream.js';

/** Feeds `json` in fragments of `size` characters and returns what came out, fragment by fragment. */
function feed(json: string, size: number, field = 'reply'): string[] {
  const stream = new JsonStringFieldStream(field);
  const out: string[] = [];
  for (let at = 0; at < json.length; at += size) out.push(stream.push(json.slice(at, at + size)));
  return out;
}

describe('JsonStringFieldStream', () => {
  const value = 'Line one\nSays "hi" \\ back — 10:00 ✂ \u00e9\ud83d\ude00 done';
  const json = JSON.stringify({ other: 'x "reply": "not this"', reply: value, after: 'ignored' });

  it('hands out exactly the decoded field, whatever the fragment size (escapes split across fragments included)', () => {
    for (const size of [1, 2, 3, 5, 7, 64, json.length]) {
      const streamed = feed(JSON.stringify({ reply: value, after: 'ignored' }), size).join('');
      expect(streamed, `fragments of ${size}`).toBe(value);
    }
  });

  it('streams as the value grows, not at the end', () => {
    const parts = feed(JSON.stringify({ reply: 'abcdefghij' }), 4);
    expect(parts.filter((part) => part !== '').length).toBeGreaterThan(1);
    expect(parts.join('')).toBe('abcdefghij');
  });

  it('yields nothing for a missing field or a value that is not a string, and stops at the closing quote', () => {
    expect(feed(JSON.stringify({ answer: 'no' }), 3).join('')).toBe('');
    expect(feed('{"reply": 42}', 2).join('')).toBe('');
    expect(feed('{"reply":"done"} trailing "text"', 5).join('')).toBe('done');
  });

  it('is not fooled by the key written inside another string value (its quotes are escaped there)', () => {
    expect(feed(json, 6).join('')).toBe(value);
  });

  it('decodes \\u escapes as the model writes them, also split across fragments', () => {
    const escaped = '{"reply": "caf\\u00e9 \\ud83d\\ude00 \\u041f"}'; // what a model writes with ASCII-only output
    for (const size of [1, 3, 4, 7, escaped.length]) expect(feed(escaped, size).join(''), `fragments of ${size}`).toBe('café 😀 П');
  });

  it('reads nothing more once the value is closed, even where the key appears again', () => {
    const stream = new JsonStringFieldStream('reply');
    expect(stream.push('{"reply": "first", ')).toBe('first');
    expect(stream.push('"reply": "second"}')).toBe('');
    expect(stream.push(' more')).toBe('');
  });

  it('matches the field name literally and finds a key at the very start of the output', () => {
    expect(feed('{"axb": "no", "a.b": "yes"}', 4, 'a.b').join('')).toBe('yes');
    expect(feed('"reply":"bare"', 3).join('')).toBe('bare');
  });
});
