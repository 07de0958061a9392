import { describe, expect, it } from 'vitest';
import {
  AUDIO_PLACEHOLDER,
  describeContent,
  formatReplyPart,
  quotedText,
  TELEGRAM_REACTION_EMOJI,
  TELEGRAM_REACTION_EMOJI_ACCEPTED,
  telegramReaction,
  toTelegramMessage,
  toTlEntities,
  transcribeAudio,
  withQuote,
  withTranscript,
  type Transcribe,
} from '../../src/channels/telegram/index.js';

describe('toTlEntities', () => {
  it('turns every entity the formatter makes into its MTProto entity, at the same UTF-16 offsets', () => {
    const message = toTelegramMessage('😀 **bold** *it* ~~gone~~ `x` [docs](https://example.com)\n\n> quoted\n\n```ts\nconst a = 1;\n```\n\n```\nplain\n```');
    expect(toTlEntities(message.entities)).toEqual([
      { _: 'messageEntityBold', offset: 3, length: 4 },
      { _: 'messageEntityItalic', offset: 8, length: 2 },
      { _: 'messageEntityStrike', offset: 11, length: 4 },
      { _: 'messageEntityCode', offset: 16, length: 1 },
      { _: 'messageEntityTextUrl', offset: 18, length: 4, url: 'https://example.com' },
      { _: 'messageEntityBlockquote', offset: 24, length: 6 },
      { _: 'messageEntityPre', offset: 32, length: 12, language: 'ts' },
      { _: 'messageEntityPre', offset: 46, length: 5, language: '' },
    ]);
    expect(message.text.slice(3, 7)).toBe('bold');
  });

  it('maps underline and spoiler, which the Bot API shape also carries', () => {
    expect(
      toTlEntities([
        { type: 'underline', offset: 0, length: 1 },
        { type: 'spoiler', offset: 1, length: 2 },
      ]),
    ).toEqual([
      { _: 'messageEntityUnderline', offset: 0, length: 1 },
      { _: 'messageEntitySpoiler', offset: 1, length: 2 },
    ]);
  });
});

describe('formatReplyPart', () => {
  it('sends a part whose formatting would pass 4096 characters as plain text', () => {
    // A right-aligned column padded to its widest cell: the source fits, the padding passes the limit.
    const part = `|${'a'.repeat(50)}|\n|-:|\n${'|b|\n'.repeat(300)}`;
    expect(part.length).toBeLessThanOrEqual(4096);
    expect(toTelegramMessage(part).text.length).toBeGreaterThan(4096);
    expect(formatReplyPart(part)).toEqual({ text: part, entities: [] });
    expect(formatReplyPart('**hi**')).toEqual({ text: 'hi', entities: [{ type: 'bold', offset: 0, length: 2 }] });
  });
});

describe('describeContent', () => {
  const transcribed = ['voice', 'video_note'] as const;

  it('describes media by type with their captions, and leaves the kinds to transcribe to the channel', () => {
    expect(describeContent({ media: { kind: 'photo' }, caption: 'my kitchen' }, { transcribed })).toEqual({ text: '[photo] my kitchen' });
    expect(describeContent({ media: { kind: 'location', latitude: 52.5, longitude: 13.4 } }, { transcribed })).toEqual({ text: '[location: 52.5, 13.4]' });
    expect(describeContent({ media: { kind: 'video_note', fileSize: 10 } }, { transcribed })).toEqual({
      text: AUDIO_PLACEHOLDER,
      audio: { kind: 'video_note', fileSize: 10 },
    });
    expect(describeContent({ media: { kind: 'voice' }, caption: 'listen' }, { transcribed })?.text).toBe(`${AUDIO_PLACEHOLDER}\n\nlisten`);
    // Audio not asked for is only described.
    expect(describeContent({ media: { kind: 'audio', title: 'Song' } }, { transcribed })).toEqual({ text: '[audio: Song]' });
    expect(describeContent({}, { transcribed })).toBeUndefined();
  });

  it("hands over the phone of the sender's own contact only", () => {
    expect(describeContent({ media: { kind: 'contact', firstName: 'Ann', lastName: 'Lee', phone: '+491701234567', isSender: true } }, { transcribed })).toEqual(
      {
        text: '[contact: Ann Lee, +491701234567]',
        phone: '+491701234567',
      },
    );
    expect(describeContent({ media: { kind: 'contact', firstName: 'Friend', phone: '+441234', isSender: false } }, { transcribed })).toEqual({
      text: '[contact: Friend, +441234]',
    });
  });
});

describe('quotes', () => {
  it('quotes a reply as > lines in front, cut at 1000 characters', () => {
    expect(withQuote(quotedText({ text: 'Shall I book\nthe 7 pm slot?' }), 'yes')).toBe('> Shall I book\n> the 7 pm slot?\n\nyes');
    expect(withQuote(quotedText({ media: { kind: 'photo' }, caption: 'this one' }), 'nice')).toBe('> [photo] this one\n\nnice');
    expect(withQuote(quotedText({}), 'alone')).toBe('alone');
    expect(withQuote('x'.repeat(1500), 'ok')).toBe(`> ${'x'.repeat(1000)}…\n\nok`);
  });

  it('puts a transcript in place verbatim, even one with $ patterns', () => {
    expect(withTranscript(`> q\n\n${AUDIO_PLACEHOLDER}`, "costs $& and $'")).toBe("> q\n\ncosts $& and $'");
  });
});

describe('transcribeAudio', () => {
  const transcribe: Transcribe = async (audio, options) =>
    `${audio.byteLength} bytes of ${options.filename} (${options.mimeType}, ${options.language ?? 'no language'})`;

  it('downloads, transcribes with the primary language subtag and trims', async () => {
    const result = await transcribeAudio({ media: { kind: 'video_note' }, transcribe, download: async () => new Uint8Array(3), languageHint: 'pt_BR' });
    expect(result).toEqual({ status: 'transcribed', text: '3 bytes of video.mp4 (video/mp4, pt)' });
  });

  it('reports off without a transcriber, and failure for a file over the limit or an empty transcript', async () => {
    let downloads = 0;
    const download = async () => {
      downloads += 1;
      return new Uint8Array(1);
    };
    expect(await transcribeAudio({ media: { kind: 'voice' }, transcribe: undefined, download })).toEqual({ status: 'off', notice: 'telegram.voiceOff' });
    const big = await transcribeAudio({ media: { kind: 'voice', fileSize: 30 }, transcribe, download, maxBytes: 20 });
    expect(big).toMatchObject({ status: 'failed', notice: 'telegram.voiceFailed' });
    expect(downloads).toBe(0);
    const empty = await transcribeAudio({ media: { kind: 'voice' }, transcribe: async () => '  ', download });
    expect(empty.status === 'failed' && String(empty.error)).toMatch(/empty/);
  });
});

describe('telegramReaction', () => {
  it("turns an emoji as models write it into Telegram's spelling, and refuses one Telegram does not allow", () => {
    expect(telegramReaction('👍')).toBe('👍');
    expect(telegramReaction('❤️')).toBe('❤');
    expect(telegramReaction('❤️‍🔥')).toBe('❤‍🔥');
    expect(telegramReaction('🤷‍♀️')).toBe('🤷‍♀');
    expect(telegramReaction('🍕')).toBeUndefined();
    expect(telegramReaction('')).toBeUndefined();
    // Every accepted spelling is one of Telegram's reactions.
    for (const emoji of TELEGRAM_REACTION_EMOJI_ACCEPTED) expect(TELEGRAM_REACTION_EMOJI).toContain(telegramReaction(emoji));
    expect(TELEGRAM_REACTION_EMOJI_ACCEPTED).toEqual(expect.arrayContaining(['❤️', '✍️', '🕊️', '☃️', '⚡️', '❤️‍🔥', '🤷‍♂️']));
  });
});
