import { describe, expect, it } from 'vitest';
import { handoffNotice } from '../../src/runtime/handoff/handoff-notice.js';
import { operatorAvailability, zonedInstant } from '../../src/runtime/handoff/operator-hours.js';

const hours = { timeZone: 'Europe/Kyiv', days: { mon: '09:00-18:00', fri: '10:00-24:00' } };

describe('operator hours', () => {
  it("are open within a day's range in their own zone, the end excluded", () => {
    expect(operatorAvailability(hours, new Date('2026-06-15T06:00:00Z'))).toEqual({ open: true }); // Mon 09:00 Kyiv
    expect(operatorAvailability(hours, new Date('2026-06-15T14:59:00Z'))).toEqual({ open: true }); // Mon 17:59
    expect(operatorAvailability(hours, new Date('2026-06-19T20:59:00Z'))).toEqual({ open: true }); // Fri 23:59, open to midnight
    expect(operatorAvailability(hours, new Date('2026-06-15T15:00:00Z'))).toEqual({ open: false, nextAt: new Date('2026-06-19T07:00:00Z') });
  });

  it('name the next opening: later today, or the next day with hours', () => {
    // Mon 08:30 Kyiv: today at 09:00.
    expect(operatorAvailability(hours, new Date('2026-06-15T05:30:00Z'))).toEqual({ open: false, nextAt: new Date('2026-06-15T06:00:00Z') });
    // Sat: next Monday 09:00.
    expect(operatorAvailability(hours, new Date('2026-06-20T12:00:00Z'))).toEqual({ open: false, nextAt: new Date('2026-06-22T06:00:00Z') });
    // Mon 20:00 with Monday the only day: the Monday after.
    expect(operatorAvailability({ timeZone: 'UTC', days: { mon: '09:00-18:00' } }, new Date('2026-06-15T20:00:00Z'))).toEqual({
      open: false,
      nextAt: new Date('2026-06-22T09:00:00Z'),
    });
    expect(operatorAvailability({ timeZone: 'UTC', days: {} }, new Date())).toBeUndefined();
  });

  it('follow daylight saving time in their zone', () => {
    // Kyiv moves from UTC+2 to UTC+3 on 29 March 2026: 09:00 is 07:00Z before, 06:00Z after.
    expect(zonedInstant(2026, 3, 27, 9, 0, 'Europe/Kyiv')).toEqual(new Date('2026-03-27T07:00:00Z'));
    expect(zonedInstant(2026, 3, 30, 9, 0, 'Europe/Kyiv')).toEqual(new Date('2026-03-30T06:00:00Z'));
    // Friday 22:00 Kyiv before the change: next Monday (after it) 09:00.
    expect(operatorAvailability(hours, new Date('2026-03-28T00:30:00Z'))).toEqual({ open: false, nextAt: new Date('2026-03-30T06:00:00Z') });
  });
});

describe('the handoff notice', () => {
  const now = new Date('2026-06-20T12:00:00Z'); // Saturday

  it('names no time without hours, "shortly" within them, and the next opening in the person\'s zone and language outside them', () => {
    const base = { defaultLanguage: 'en', timeZone: 'Asia/Shanghai', now };
    expect(handoffNotice({ ...base, language: 'uk', hours: undefined })).toBe('Вашу розмову передано співробітнику нашої команди. Вам відповідять тут.');
    expect(handoffNotice({ ...base, language: 'en', hours, now: new Date('2026-06-15T10:00:00Z') })).toContain('shortly');
    expect(handoffNotice({ ...base, language: 'ru', hours })).toBe(
      `Ваш разговор передан сотруднику нашей команды. Вам ответят здесь, когда начнётся рабочее время: ${new Intl.DateTimeFormat('ru', {
        timeZone: 'Asia/Shanghai',
        weekday: 'long',
        day: 'numeric',
        month: 'long',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
        timeZoneName: 'short',
      }).format(new Date('2026-06-22T06:00:00Z'))}.`,
    );
    // Monday 09:00 in Kyiv is 14:00 in Shanghai.
    expect(handoffNotice({ ...base, language: 'zh', hours })).toContain('14:00');
    // A language Palaver does not speak: the default language's text, its date in that language too.
    expect(handoffNotice({ ...base, language: 'de', hours })).toContain('Monday, June 22 at 14:00');
  });
});
