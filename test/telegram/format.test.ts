import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { splitTelegramMessage, toTelegramMessage, type MessageEntity, type TelegramMessage } from '../../src/channels/telegram-bot/format.js';
import { fuzz } from '../support/fuzz.js';

type Case = readonly [name: string, markdown: string, text: string, entities: readonly MessageEntity[]];

const cases: readonly Case[] = [
  ['plain text', 'Hello there.', 'Hello there.', []],
  [
    'bold and italic',
    '**bold** and *it* and _it_',
    'bold and it and it',
    [
      { type: 'bold', offset: 0, length: 4 },
      { type: 'italic', offset: 9, length: 2 },
      { type: 'italic', offset: 16, length: 2 },
    ],
  ],
  [
    'bold italic together',
    '***both***',
    'both',
    [
      { type: 'bold', offset: 0, length: 4 },
      { type: 'italic', offset: 0, length: 4 },
    ],
  ],
  ['strikethrough (double tilde)', 'was ~~10~~ 8', 'was 10 8', [{ type: 'strikethrough', offset: 4, length: 2 }]],
  ['single tildes stay text', 'takes ~5 min, costs ~$10', 'takes ~5 min, costs ~$10', []],
  ['inline code', 'run `npm test` now', 'run npm test now', [{ type: 'code', offset: 4, length: 8 }]],
  ['code block with language', '```ts\nconst x = 1;\n```', 'const x = 1;', [{ type: 'pre', offset: 0, length: 12, language: 'ts' }]],
  ['code block without language', 'See:\n\n    indented\n    code', 'See:\n\nindented\ncode', [{ type: 'pre', offset: 6, length: 13 }]],
  ['link', '[docs](https://example.com/docs)', 'docs', [{ type: 'text_link', offset: 0, length: 4, url: 'https://example.com/docs' }]],
  [
    'nested bold in link',
    '[see **this** page](https://a.example)',
    'see this page',
    [
      { type: 'text_link', offset: 0, length: 13, url: 'https://a.example' },
      { type: 'bold', offset: 4, length: 4 },
    ],
  ],
  [
    'link in bold',
    '**read [it](https://a.example)**',
    'read it',
    [
      { type: 'bold', offset: 0, length: 7 },
      { type: 'text_link', offset: 5, length: 2, url: 'https://a.example' },
    ],
  ],
  [
    'bold cut around code',
    '**call `f()` twice**',
    'call f() twice',
    [
      { type: 'bold', offset: 0, length: 5 },
      { type: 'code', offset: 5, length: 3 },
      { type: 'bold', offset: 8, length: 6 },
    ],
  ],
  ['code inside a link loses monospace', '[`x`](https://a.example)', 'x', [{ type: 'text_link', offset: 0, length: 1, url: 'https://a.example' }]],
  [
    'reference link',
    'Read [the guide][g].\n\n[g]: https://g.example "Guide"',
    'Read the guide.',
    [{ type: 'text_link', offset: 5, length: 9, url: 'https://g.example' }],
  ],
  ['bare and angle URLs stay text', 'Go to https://a.example or <https://b.example>.', 'Go to https://a.example or https://b.example.', []],
  ['link whose text is its URL stays text', '[https://a.example](https://a.example)', 'https://a.example', []],
  ['relative link keeps its text', '[the docs](/docs)', 'the docs', []],
  ['domain without scheme', '[site](example.com/x)', 'site', [{ type: 'text_link', offset: 0, length: 4, url: 'https://example.com/x' }]],
  ['mailto shows the address', '[write us](mailto:hi@a.example)', 'write us (hi@a.example)', []],
  ['javascript: link is not linked', '[x](javascript:alert(1))', 'x', []],
  ['empty link text shows the URL', '[](https://a.example)', 'https://a.example', []],
  [
    'emoji offsets count UTF-16 units',
    '😀 **hi** 👍🏽 *yo*',
    '😀 hi 👍🏽 yo',
    [
      { type: 'bold', offset: 3, length: 2 },
      { type: 'italic', offset: 11, length: 2 },
    ],
  ],
  ['astral characters inside an entity', '**𝒳𝒴**', '𝒳𝒴', [{ type: 'bold', offset: 0, length: 4 }]],
  [
    'headings become bold lines',
    '# Title\n\nBody text.\n\n## Sub *part*',
    'Title\n\nBody text.\n\nSub part',
    [
      { type: 'bold', offset: 0, length: 5 },
      { type: 'bold', offset: 19, length: 8 },
      { type: 'italic', offset: 23, length: 4 },
    ],
  ],
  ['setext heading', 'Title\n=====\nnext', 'Title\n\nnext', [{ type: 'bold', offset: 0, length: 5 }]],
  ['bullet list', '- one\n- **two**\n* three', '• one\n• two\n\n• three', [{ type: 'bold', offset: 8, length: 3 }]],
  ['ordered list keeps its start', '3. c\n4. d', '3. c\n4. d', []],
  ['nested lists are indented', '- a\n  - b\n    1. c\n- d', '• a\n  • b\n    1. c\n• d', []],
  ['list item with two paragraphs', '1. first\n\n   more\n2. second', '1. first\n   more\n2. second', []],
  [
    'blockquote',
    '> quoted **text**\n> more',
    'quoted text\nmore',
    [
      { type: 'blockquote', offset: 0, length: 16 },
      { type: 'bold', offset: 7, length: 4 },
    ],
  ],
  ['nested blockquote is flattened', '> a\n> > b', 'a\nb', [{ type: 'blockquote', offset: 0, length: 3 }]],
  [
    'table becomes a pre block',
    '| Name | Qty |\n|:-----|----:|\n| tea | 2 |\n| `cake` | 10 |',
    'Name | Qty\n-----+----\ntea  |   2\ncake |  10',
    [{ type: 'pre', offset: 0, length: 43 }],
  ],
  [
    'image becomes alt text linked to it',
    '![a cat](https://c.example/cat.png)',
    'a cat',
    [{ type: 'text_link', offset: 0, length: 5, url: 'https://c.example/cat.png' }],
  ],
  ['image without alt shows its URL', '![](https://c.example/cat.png)', 'https://c.example/cat.png', []],
  [
    'linked image: one link only',
    '[![logo](https://i.example/l.png)](https://home.example)',
    'logo',
    [{ type: 'text_link', offset: 0, length: 4, url: 'https://home.example' }],
  ],
  ['inline HTML passes as text', 'a <b>b</b> c', 'a <b>b</b> c', []],
  ['HTML block passes as text', '<div>\nhi\n</div>', '<div>\nhi\n</div>', []],
  ['thematic break', 'a\n\n---\n\nb', 'a\n\n———\n\nb', []],
  ['hard line break', 'a  \nb\\\nc', 'a\nb\nc', []],
  ['escapes and character references', '\\*not bold\\* &amp; &lt;', '*not bold* & <', []],
  ['lone star stays text', '*', '*', []],
  ['star in a sentence stays text', 'rate 5 * 3 = 15', 'rate 5 * 3 = 15', []],
  ['unbalanced underscore stays text', 'file_name and _open', 'file_name and _open', []],
  ['unbalanced bold stays text', '**not closed', '**not closed', []],
  ['unclosed fence runs to the end', '```py\nprint(1)', 'print(1)', [{ type: 'pre', offset: 0, length: 8, language: 'py' }]],
  ['surrounding whitespace is trimmed', '\n\n  **x**  \n\n', 'x', [{ type: 'bold', offset: 0, length: 1 }]],
  ['only a definition falls back to the source', '[a]: https://a.example', '[a]: https://a.example', []],
  ['lone surrogate becomes U+FFFD', 'a\uD800b', 'a\uFFFDb', []],
];

describe('toTelegramMessage', () => {
  it.each(cases)('%s', (_name, markdown, text, entities) => {
    const message = toTelegramMessage(markdown);
    expect(message.text).toBe(text);
    expect(message.entities).toEqual(entities);
    expectValid(message);
  });

  it('never throws and always yields valid, properly nested entities', () => {
    const markdownish = fc.stringMatching(/^[ \n*_~`[\]()!#>|:\-+.1a-z😀é\\<>]{0,80}$/u);
    fuzz(
      'markdown to telegram entities',
      fc.property(fc.oneof(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), markdownish), (markdown) => {
        const message = toTelegramMessage(markdown);
        expectValid(message);
        if (markdown.trim()) expect(message.text.length).toBeGreaterThan(0);
      }),
      { numRuns: 600 },
    );
  });

  // Generous bounds: they catch a runaway walk or a backtracking regex, not a slow machine. Inputs are about the size
  // the pipeline hands over (it splits replies to 4096 first). micromark itself grows faster than linearly with
  // container depth ('- ' nested thousands deep), hence the modest depth of that case.
  it('formats a long reply and pathological inputs quickly', () => {
    const block = '## Part\n\nSome **bold**, *italic*, `code` and [a link](https://a.example).\n\n- one\n- two\n\n> quote\n\n';
    const inputs = [
      block.repeat(60),
      '>'.repeat(4_000) + ' deep',
      '*'.repeat(4_000),
      '_a '.repeat(1_300),
      '['.repeat(2_000) + ']('.repeat(1_000),
      '- '.repeat(500) + 'x',
      '*a '.repeat(1_000) + '*',
      '`'.repeat(4_000),
      '|a'.repeat(600) + '\n' + '|-'.repeat(600) + '\n' + '|b'.repeat(600),
    ];
    for (const markdown of inputs) {
      const started = performance.now();
      const message = toTelegramMessage(markdown);
      expect(performance.now() - started, markdown.slice(0, 20)).toBeLessThan(5_000);
      expect(message.text.length).toBeGreaterThan(0);
      expect(message.entities.every((entity) => entity.offset + entity.length <= message.text.length)).toBe(true);
    }
  });
});

describe('splitTelegramMessage', () => {
  it('returns a short message as one part', () => {
    const message = toTelegramMessage('**hi** there');
    expect(splitTelegramMessage(message)).toEqual([message]);
  });

  it('cuts at a paragraph break and shifts the entities', () => {
    const message = toTelegramMessage(`**${'a'.repeat(10)}**\n\n*${'b'.repeat(10)}*`);
    const parts = splitTelegramMessage(message, 15);
    expect(parts).toEqual([
      { text: 'a'.repeat(10), entities: [{ type: 'bold', offset: 0, length: 10 }] },
      { text: 'b'.repeat(10), entities: [{ type: 'italic', offset: 0, length: 10 }] },
    ]);
  });

  it('splits an entity that spans a cut into two', () => {
    const words = Array.from({ length: 30 }, (_, index) => `word${index}`).join(' ');
    const message = toTelegramMessage(`**${words}**`);
    const parts = splitTelegramMessage(message, 50);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(50);
      expect(part.entities).toEqual([{ type: 'bold', offset: 0, length: part.text.length }]);
    }
    expect(parts.map((part) => part.text).join(' ')).toBe(words);
  });

  it('keeps a link URL and a code language on both halves', () => {
    const message: TelegramMessage = {
      text: `${'x'.repeat(8)} ${'y'.repeat(8)}`,
      entities: [
        { type: 'text_link', offset: 4, length: 10, url: 'https://a.example' },
        { type: 'pre', offset: 0, length: 17, language: 'ts' },
      ],
    };
    expect(splitTelegramMessage(message, 10)).toEqual([
      {
        text: 'x'.repeat(8),
        entities: [
          { type: 'text_link', offset: 4, length: 4, url: 'https://a.example' },
          { type: 'pre', offset: 0, length: 8, language: 'ts' },
        ],
      },
      {
        text: 'y'.repeat(8),
        entities: [
          { type: 'text_link', offset: 0, length: 5, url: 'https://a.example' },
          { type: 'pre', offset: 0, length: 8, language: 'ts' },
        ],
      },
    ]);
  });

  it('never cuts inside a surrogate pair', () => {
    const message = toTelegramMessage(`**${'😀'.repeat(10)}**`);
    const parts = splitTelegramMessage(message, 5);
    expect(() => splitTelegramMessage(message, 3)).toThrow(RangeError);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(5);
      expect(part.text).toMatch(/^(?![\uDC00-\uDFFF])[\s\S]*(?<![\uD800-\uDBFF])$/);
      expect(part.entities).toEqual([{ type: 'bold', offset: 0, length: part.text.length }]);
    }
    expect(parts.map((part) => part.text).join('')).toBe('😀'.repeat(10));
  });

  it('splits a 10,000-character formatted reply into valid parts that join back whole', () => {
    const paragraph = 'This is **important**: read [the guide](https://g.example) and run `npm test`. 😀 Then rest.';
    const message = toTelegramMessage(Array.from({ length: 150 }, () => paragraph).join('\n\n'));
    expect(message.text.length).toBeGreaterThan(10_000);
    const parts = splitTelegramMessage(message);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(4096);
      expectValid(part);
    }
    expect(parts.map((part) => part.text).join('\n\n')).toBe(message.text);
    expect(parts.reduce((sum, part) => sum + part.entities.length, 0)).toBe(message.entities.length);
  });

  it('gives valid parts whose text is the whole, for random formatted text and limits', () => {
    const piece = fc.constantFrom('word', '**bold words here**', '*it*', '`code`', '[link](https://a.example)', '😀', '\n\n', '. ', ' ', '> q\n\n', '- item\n');
    fuzz(
      'telegram message split',
      fc.property(fc.array(piece, { maxLength: 60 }), fc.integer({ min: 4, max: 120 }), (pieces, max) => {
        const message = toTelegramMessage(pieces.join(''));
        const parts = splitTelegramMessage(message, max);
        for (const part of parts) {
          expect(part.text.length).toBeLessThanOrEqual(max);
          expectValid(part);
        }
        // Only whitespace is dropped at the cuts.
        expect(
          parts
            .map((part) => part.text)
            .join('')
            .replace(/\s+/g, ''),
        ).toBe(message.text.replace(/\s+/g, ''));
        let position = 0;
        for (const part of parts) {
          const start = message.text.indexOf(part.text, position);
          expect(message.text.slice(position, start).trim()).toBe('');
          // Each part's entities are exactly the original entities clipped to the part.
          const expected = message.entities
            .map((entity) => {
              const from = Math.max(entity.offset, start);
              const to = Math.min(entity.offset + entity.length, start + part.text.length);
              return { ...entity, offset: from - start, length: to - from };
            })
            .filter((entity) => entity.length > 0);
          expect(part.entities).toEqual(expected);
          position = start + part.text.length;
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Every entity lies within the text, is non-empty, and any two entities are disjoint or nested (never crossing). */
function expectValid(message: TelegramMessage): void {
  const { text, entities } = message;
  for (const entity of entities) {
    expect(Number.isInteger(entity.offset) && Number.isInteger(entity.length)).toBe(true);
    expect(entity.offset).toBeGreaterThanOrEqual(0);
    expect(entity.length).toBeGreaterThan(0);
    expect(entity.offset + entity.length).toBeLessThanOrEqual(text.length);
  }
  for (const a of entities) {
    for (const b of entities) {
      if (a === b) continue;
      const aEnd = a.offset + a.length;
      const bEnd = b.offset + b.length;
      const disjoint = aEnd <= b.offset || bEnd <= a.offset;
      const aInB = a.offset >= b.offset && aEnd <= bEnd;
      const bInA = b.offset >= a.offset && bEnd <= aEnd;
      expect(disjoint || aInB || bInA, `${JSON.stringify(a)} crosses ${JSON.stringify(b)} in ${JSON.stringify(text)}`).toBe(true);
      if (disjoint) continue;
      // code and pre contain nothing and sit only in a quote; links and quotes do not nest in their own kind.
      if (a.type === 'code' || a.type === 'pre') expect(b.type === 'blockquote' && aInB, `${JSON.stringify(b)} overlaps ${JSON.stringify(a)}`).toBe(true);
      if (a.type === 'text_link' || a.type === 'blockquote') expect(b.type).not.toBe(a.type);
    }
    expect(a.type === 'text_link' ? typeof a.url === 'string' && /^(https?|tg):\/\//.test(a.url) : true).toBe(true);
  }
}
