import { describe, expect, it } from 'vitest';
import { findPhoneInText, normalisePhone, type PhoneProblem } from '../../src/identity/phones.js';

/** [input, default region, E.164 digits without the plus] */
const VALID: readonly (readonly [string, string | undefined, string])[] = [
  // Ukraine
  ['067 123 45 67', 'UA', '380671234567'],
  ['0671234567', 'UA', '380671234567'],
  ['+380 67 123 4567', undefined, '380671234567'],
  ['+38 (067) 123-45-67', 'DE', '380671234567'],
  ['044 123 4567', 'UA', '380441234567'],
  // United States
  ['(201) 555-0123', 'US', '12015550123'],
  ['201.555.0123', 'US', '12015550123'],
  ['+1 201 555 0123', undefined, '12015550123'],
  ['1-201-555-0123', 'US', '12015550123'],
  // Germany
  ['030 123456', 'DE', '4930123456'],
  ['0151 23456789', 'DE', '4915123456789'],
  ['+49 30 1234567', 'UA', '49301234567'],
  ['+49 (0)151 23456789', undefined, '4915123456789'],
  // China
  ['138 0013 8000', 'CN', '8613800138000'],
  ['010 1234 5678', 'CN', '861012345678'],
  ['+86 138 0013 8000', undefined, '8613800138000'],
  // United Kingdom
  ['020 7946 0018', 'GB', '442079460018'],
  ['07400 123456', 'GB', '447400123456'],
  ['+44 20 7946 0018', 'US', '442079460018'],
];

/** [input, default region, why it is refused] */
const INVALID: readonly (readonly [string, string | undefined, PhoneProblem])[] = [
  ['hello', 'UA', 'not_a_number'],
  ['', 'UA', 'not_a_number'],
  ['12', 'UA', 'too_short'],
  ['067 123 45', 'UA', 'too_short'],
  ['0671234567', undefined, 'no_region'],
  ['067 123 45 67', 'XX', 'unknown_region'],
  ['+380 00 123 4567', undefined, 'invalid_number'],
  ['+1 201 055 0123', undefined, 'invalid_number'],
  ['+1 555 555 5555', 'US', 'invalid_number'],
  ['+49 30 1', undefined, 'too_short'],
  ['+86 100 0013 8000', undefined, 'invalid_number'],
  ['+86 138 0013 8000 0000', undefined, 'too_long'],
  ['07700 900123', 'GB', 'invalid_number'],
  ['+999 123456789', undefined, 'invalid_number'],
  ['+', undefined, 'not_a_number'],
  ['+1', undefined, 'too_short'],
  ['1', 'UA', 'too_short'],
  ['+1234567890123456789', undefined, 'too_long'],
  ['+44 2222 2222', undefined, 'invalid_length'],
];

describe('normalisePhone', () => {
  it.each(VALID)('%s (%s) → %s', async (input, region, digits) => {
    expect(await normalisePhone(input, region)).toEqual({ ok: true, digits });
  });

  it.each(INVALID)('%s (%s) is refused: %s', async (input, region, reason) => {
    const result = await normalisePhone(input, region);
    expect(result).toMatchObject({ ok: false, reason });
    if (!result.ok) expect(result.message).toMatch(/\.$/);
  });

  it('reads a bare international number from a channel that leaves the plus out, and still takes a national one', async () => {
    expect(await normalisePhone('380671234567', 'UA', { plusOptional: true })).toEqual({ ok: true, digits: '380671234567' });
    expect(await normalisePhone('0671234567', 'UA', { plusOptional: true })).toEqual({ ok: true, digits: '380671234567' });
    // A German contact seen by a Ukrainian bot: read as international, separators and all.
    expect(await normalisePhone('4915123456789', 'UA', { plusOptional: true })).toEqual({ ok: true, digits: '4915123456789' });
    expect(await normalisePhone(' 49 (151) 2345-6789 ', 'UA', { plusOptional: true })).toEqual({ ok: true, digits: '4915123456789' });
    // Digits that make no valid international number are read in the default region after all.
    expect(await normalisePhone('6502530000', 'US', { plusOptional: true })).toEqual({ ok: true, digits: '16502530000' });
    // Without the option the same digits are a (too long) Ukrainian number.
    expect(await normalisePhone('4915123456789', 'UA')).toMatchObject({ ok: false, reason: 'too_long' });
  });

  it('takes a number only, not a sentence around one, when the region is known', async () => {
    expect(await normalisePhone('call me at 067 123 45 67', 'UA')).toMatchObject({ ok: false, reason: 'not_a_number' });
  });

  it('tells the person which region a refused number was checked against', async () => {
    expect(await normalisePhone('+49 1234')).toMatchObject({ reason: 'invalid_number', message: 'The number is not a valid phone number for DE.' });
    expect(await normalisePhone('0301', 'de')).toMatchObject({ reason: 'invalid_number', message: 'The number is not a valid phone number for DE.' });
    expect(await normalisePhone('+44 20 7946 001')).toMatchObject({ reason: 'invalid_number', message: 'The number is not a valid phone number.' });
    expect(await normalisePhone('+44 2222 2222')).toMatchObject({ reason: 'invalid_length', message: 'The number has a length no number has.' });
    expect(await normalisePhone('067 123 45 67', 'XX')).toMatchObject({
      reason: 'unknown_region',
      message: 'The region XX is not an ISO 3166-1 alpha-2 code with a numbering plan.',
    });
  });
});

describe('findPhoneInText', () => {
  it('finds the first valid number in what a person writes', async () => {
    expect(await findPhoneInText('my number is 067 123 45 67, call me', 'UA')).toBe('380671234567');
    expect(await findPhoneInText('tel +44 7700 900123 or rather 0671234567', 'UA')).toBe('380671234567');
    expect(await findPhoneInText('Мій номер +380671234567', undefined)).toBe('380671234567');
    expect(await findPhoneInText('0671234567', 'UA')).toBe('380671234567');
    expect(await findPhoneInText('(067) 123-45-67', 'ua')).toBe('380671234567');
    // A default region with no numbering plan is ignored, not an error.
    expect(await findPhoneInText('call +380671234567', 'XX')).toBe('380671234567');
    expect(await findPhoneInText('call 0671234567', 'XX')).toBeUndefined();
  });

  it('finds nothing in text without a phone number', async () => {
    expect(await findPhoneInText('hello, book me for Tuesday', 'UA')).toBeUndefined();
    expect(await findPhoneInText('order 12345 on 2024-05-01 at 10:30', 'UA')).toBeUndefined();
    expect(await findPhoneInText('067 123 45', 'UA')).toBeUndefined();
  });
});
