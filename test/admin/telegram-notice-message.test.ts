import { describe, expect, it } from 'vitest';
import { telegramNoticeMessage, type HandoffNotice } from '../../src/admin/handoff-notices/index.js';

const notice: HandoffNotice = {
  handoffId: 'h1',
  round: 3,
  rounds: 4,
  sessionId: 'session-7',
  userId: 'user-9',
  channel: null,
  reason: 'asked for\n  a person',
  source: 'phrase',
  requestedAt: new Date('2026-11-27T12:58:04Z'),
  person: { name: null },
  lastMessages: [],
  url: null,
};

describe("the operators' Telegram notice", () => {
  it('names an unknown person by id, says which reminder it is, and marks the conversation id as code', () => {
    const message = telegramNoticeMessage(notice);
    expect(message.text).toBe(
      [
        '🙋 A person is wanted: user user-9',
        'Why: asked for a person',
        'Asked by the person (in words that ask for one), 2026-11-27 12:58 UTC',
        'Reminder 2 of 3: nobody has taken it yet.',
        '',
        'Conversation session-7',
      ].join('\n'),
    );
    const slice = (entity: { offset: number; length: number }) => message.text.slice(entity.offset, entity.offset + entity.length);
    expect(message.entities.map((entity) => [entity.type, slice(entity)])).toEqual([
      ['bold', '🙋 A person is wanted: user user-9'],
      ['code', 'session-7'],
    ]);
  });

  it('cuts a long name, and keeps a whole notice far below 4096 characters', () => {
    const message = telegramNoticeMessage({
      ...notice,
      person: { name: 'N'.repeat(1000) },
      reason: 'r'.repeat(1000),
      lastMessages: Array.from({ length: 5 }, () => ({ role: 'user' as const, text: 'm'.repeat(500), at: new Date() })),
      url: `https://support.example.com/admin#/conversations/${'s'.repeat(36)}`,
    });
    expect(message.text.split('\n')[0]).toBe(`🙋 A person is wanted: ${'N'.repeat(99)}…`);
    expect(message.text.length).toBeLessThan(4096);
  });
});
