/**
 * Phone numbers as Palaver keeps them: E.164 digits without the plus (`380671234567`), one number per user.
 *
 * libphonenumber-js is about 11 MB on disk and its metadata a few hundred kB in memory, so it is imported on first
 * use only: a Palaver that never sees a phone never loads it. The `max` metadata is used because only it checks a
 * number against each region's real number ranges; `min` checks little more than the length (it takes, e.g.,
 * `+86 100 0013 8000`, which no Chinese number starts with, for a valid number).
 */

/** Why a text is not a phone number Palaver can keep. */
export type PhoneProblem = 'not_a_number' | 'no_region' | 'unknown_region' | 'too_short' | 'too_long' | 'invalid_length' | 'invalid_number';

export type PhoneNormalisation =
  | { readonly ok: true; readonly digits: string }
  | { readonly ok: false; readonly reason: PhoneProblem; readonly message: string };

export interface NormaliseOptions {
  /**
   * The number comes from a system that writes international numbers without the plus (Telegram's contacts do): a
   * run of digits not starting with 0 is read as international first.
   */
  readonly plusOptional?: boolean;
}

type PhoneLibrary = typeof import('libphonenumber-js/max');
type CountryCode = import('libphonenumber-js/max').CountryCode;

let library: Promise<PhoneLibrary> | undefined;

function loadLibrary(): Promise<PhoneLibrary> {
  // A failed import is not cached: the next call tries again.
  library ??= import('libphonenumber-js/max').catch((error: unknown) => {
    library = undefined;
    throw error;
  });
  return library;
}

/** At least 7 digits, perhaps with a plus and separators between them: what every phone number has. */
const DIGIT_RUN = /\d(?:[\s().\-/]{0,2}\d){6,}/;
const BARE_INTERNATIONAL = /^[1-9]\d{6,14}$/;

/**
 * Normalises a phone number to E.164 digits without the plus.
 *
 * @param defaultRegion ISO 3166-1 alpha-2 region for a number written without its country code.
 * @example
 * await normalisePhone('067 123 45 67', 'UA'); // { ok: true, digits: '380671234567' }
 * await normalisePhone('+44 7700 900123');     // { ok: false, reason: 'invalid_number', … } (a range kept for drama)
 */
export async function normalisePhone(input: string, defaultRegion?: string, options: NormaliseOptions = {}): Promise<PhoneNormalisation> {
  const text = input.trim();
  if (!/\d/.test(text)) return problem('not_a_number');
  const lib = await loadLibrary();
  const region = defaultRegion?.toUpperCase();
  if (region !== undefined && !lib.isSupportedCountry(region)) return problem('unknown_region', region);
  if (options.plusOptional === true && BARE_INTERNATIONAL.test(text.replace(/[\s().-]/g, ''))) {
    const international = parse(lib, `+${text}`, undefined);
    if (international.ok) return international;
  }
  return parse(lib, text, region);
}

/**
 * The first valid phone number in a text, as E.164 digits without the plus; undefined when there is none. A text
 * without a run of seven digits is answered without loading the library.
 */
export async function findPhoneInText(text: string, defaultRegion?: string): Promise<string | undefined> {
  if (!DIGIT_RUN.test(text)) return undefined;
  const lib = await loadLibrary();
  const region = defaultRegion?.toUpperCase();
  const options = region !== undefined && lib.isSupportedCountry(region) ? { defaultCountry: region } : {};
  // The library's default leniency finds valid numbers only.
  for (const found of lib.searchPhoneNumbersInText(text, options)) return found.number.number.slice(1);
  return undefined;
}

function parse(lib: PhoneLibrary, text: string, region: string | undefined): PhoneNormalisation {
  // Checked by the caller: a region it passes is supported.
  const defaultCountry = region as CountryCode | undefined;
  let phone: ReturnType<PhoneLibrary['parsePhoneNumberWithError']>;
  try {
    phone = lib.parsePhoneNumberWithError(text, region === undefined ? undefined : { defaultCountry, extract: false });
  } catch (error) {
    if (error instanceof lib.ParseError) return fromParseError(error.message, text.startsWith('+') || region !== undefined);
    throw error;
  }
  if (phone.isValid()) return { ok: true, digits: phone.number.slice(1) };
  const length = lib.validatePhoneNumberLength(text, region === undefined ? undefined : { defaultCountry });
  if (length === 'TOO_SHORT') return problem('too_short');
  if (length === 'TOO_LONG') return problem('too_long');
  if (length === 'INVALID_LENGTH') return problem('invalid_length', phone.country ?? region);
  return problem('invalid_number', phone.country ?? region);
}

function fromParseError(code: string, hasCountry: boolean): PhoneNormalisation {
  switch (code) {
    case 'INVALID_COUNTRY':
      // With a plus or a default region it is a calling code no country has.
      return problem(hasCountry ? 'invalid_number' : 'no_region');
    case 'TOO_SHORT':
      return problem('too_short');
    case 'TOO_LONG':
      return problem('too_long');
    default:
      return problem('not_a_number');
  }
}

function problem(reason: PhoneProblem, region?: string): PhoneNormalisation {
  const where = region === undefined ? '' : ` for ${region}`;
  const messages: Record<PhoneProblem, string> = {
    not_a_number: 'This is not a phone number.',
    no_region: 'The number has no country code (+…) and no default region is configured (identity.phones.defaultRegion).',
    unknown_region: `The region ${region ?? ''} is not an ISO 3166-1 alpha-2 code with a numbering plan.`,
    too_short: 'The number is too short.',
    too_long: 'The number is too long.',
    invalid_length: `The number has a length no number${where} has.`,
    invalid_number: `The number is not a valid phone number${where}.`,
  };
  return { ok: false, reason, message: messages[reason] };
}
