import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { defaultProfile, parseStoredProfile, validateProfileUpdate, type ProfileDefaults } from '../../src/identity/profile-settings.js';

const defaults: ProfileDefaults = { interfaceLanguage: 'en', aiLanguage: 'en', timeZone: 'UTC', country: null };
const current = defaultProfile(defaults);

function update(preferences: Record<string, unknown>) {
  return validateProfileUpdate({ preferences }, current);
}

describe('profile settings: language tags', () => {
  it.each([
    ['en', 'en'],
    ['en-us', 'en-US'],
    ['EN-GB', 'en-GB'],
    ['zh-hant-tw', 'zh-Hant-TW'],
    ['sr-latn', 'sr-Latn'],
    ['pt_BR', 'pt-BR'],
    ['es-419', 'es-419'],
  ])('accepts %s, stored as %s', (tag, canonical) => {
    const result = update({ interfaceLanguage: tag, aiLanguage: tag });
    expect(result).toMatchObject({ ok: true, settings: { preferences: { interfaceLanguage: canonical, aiLanguage: canonical } } });
  });

  it.each(['', 'en us', 'englishes', 'en--US', 'x-private', '12', 'en-US-'])('refuses %j with the field named', (tag) => {
    const result = update({ aiLanguage: tag });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors).toEqual([{ path: 'preferences.aiLanguage', message: expect.stringContaining('BCP-47') }]);
  });
});

describe('profile settings: time zones', () => {
  it.each([
    ['Europe/Kyiv', 'Europe/Kyiv'],
    ['america/new_york', 'America/New_York'],
    ['UTC', 'UTC'],
    ['Asia/Shanghai', 'Asia/Shanghai'],
  ])('accepts %s, stored as %s', (zone, canonical) => {
    expect(update({ timeZone: zone })).toMatchObject({ ok: true, settings: { preferences: { timeZone: canonical } } });
  });

  it('never stores a zone in the lower case it was typed in, even where Intl knows it only as an alias', () => {
    const result = update({ timeZone: 'europe/kyiv' });
    // Node 20's ICU names Kyiv only as an alias of Europe/Kiev; newer ones list Europe/Kyiv.
    expect(result.ok && ['Europe/Kyiv', 'Europe/Kiev'].includes(String(result.settings.preferences.timeZone))).toBe(true);
  });

  it.each(['Mars/Olympus_Mons', '+03:00', '', 'Europe'])('refuses %j', (zone) => {
    const result = update({ timeZone: zone });
    expect(!result.ok && result.errors).toEqual([{ path: 'preferences.timeZone', message: expect.stringContaining('IANA') }]);
  });
});

describe('profile settings: countries', () => {
  it.each([
    ['UA', 'UA'],
    ['us', 'US'],
    ['De', 'DE'],
  ])('accepts %s, stored as %s', (code, canonical) => {
    expect(update({ country: code })).toMatchObject({ ok: true, settings: { preferences: { country: canonical } } });
  });

  it('lets a country be cleared', () => {
    const withCountry = validateProfileUpdate({ preferences: { country: 'GB' } }, current);
    expect(withCountry.ok && validateProfileUpdate({ preferences: { country: null } }, withCountry.settings)).toMatchObject({
      ok: true,
      settings: { preferences: { country: null } },
    });
  });

  it.each(['ZZ', 'UKR', '804', 'U', 'EU'])('refuses %j (not an alpha-2 code on the list)', (code) => {
    const result = update({ country: code });
    expect(!result.ok && result.errors).toEqual([{ path: 'preferences.country', message: expect.stringContaining('ISO 3166-1 alpha-2') }]);
  });
});

describe('profile settings: updates', () => {
  it('keeps what an update leaves out and returns a frozen object', () => {
    const first = validateProfileUpdate({ preferences: { aiLanguage: 'uk', country: 'UA' } }, current);
    expect(first.ok).toBe(true);
    const second = validateProfileUpdate({ preferences: { timeZone: 'Europe/Kyiv' } }, first.ok ? first.settings : current);
    expect(second).toEqual({
      ok: true,
      settings: {
        version: 1,
        preferences: { interfaceLanguage: 'en', aiLanguage: 'uk', timeZone: 'Europe/Kyiv', country: 'UA' },
        privacy: {},
        notification: {},
      },
    });
    expect(second.ok && Object.isFrozen(second.settings.preferences)).toBe(true);
  });

  it('names every refused field and applies none of the update', () => {
    const result = validateProfileUpdate({ preferences: { aiLanguage: 'klingon!', timeZone: 'Nowhere/City', interfaceLanguage: 'ru' } }, current);
    expect(result).toEqual({
      ok: false,
      errors: [
        { path: 'preferences.aiLanguage', message: expect.any(String) },
        { path: 'preferences.timeZone', message: expect.any(String) },
      ],
    });
  });

  it('refuses unknown fields and a future version', () => {
    expect(validateProfileUpdate({ preferences: { colour: 'blue' } }, current)).toMatchObject({ ok: false, errors: [{ path: 'preferences' }] });
    expect(validateProfileUpdate({ theme: 'dark' }, current)).toMatchObject({ ok: false, errors: [{ path: '(root)' }] });
    expect(validateProfileUpdate({ version: 2 }, current)).toEqual({ ok: false, errors: [{ path: 'version', message: 'only version 1 is supported' }] });
    expect(validateProfileUpdate('nonsense', current)).toMatchObject({ ok: false });
  });
});

describe('profile settings: defaults and seeding', () => {
  it('seeds both languages from a valid channel hint and takes the rest from the defaults', () => {
    const seeded = defaultProfile({ ...defaults, timeZone: 'Europe/Kyiv', country: 'UA' }, { language: 'uk_ua' });
    expect(seeded).toEqual({
      version: 1,
      preferences: { interfaceLanguage: 'uk-UA', aiLanguage: 'uk-UA', timeZone: 'Europe/Kyiv', country: 'UA' },
      privacy: {},
      notification: {},
    });
    expect(defaultProfile(defaults, { language: 'not a tag' }).preferences.aiLanguage).toBe('en');
    expect(defaultProfile(defaults, { language: null }).preferences.interfaceLanguage).toBe('en');
  });

  it('takes its defaults from config, falling back to agent.language and agent.timezone', () => {
    const config = parseConfig({
      model: { name: 'm' },
      agent: { language: 'ru', timezone: 'Europe/Moscow' },
      profiles: { defaults: { aiLanguage: 'en-gb', country: 'de' } },
    });
    expect(config.profiles.defaults).toEqual({ aiLanguage: 'en-GB', country: 'de' });
    expect(() => parseConfig({ model: { name: 'm' }, profiles: { defaults: { timeZone: 'Moon/Base' } } })).toThrow(/profiles\.defaults\.timeZone/);
    expect(() => parseConfig({ model: { name: 'm' }, profiles: { defaults: { country: 'XX' } } })).toThrow(/profiles\.defaults\.country/);
  });
});

describe('profile settings: stored profiles', () => {
  it('reads a stored profile and fills missing fields from the defaults', () => {
    const stored = JSON.stringify({ version: 1, preferences: { aiLanguage: 'zh-Hant-TW', country: 'CN' } });
    expect(parseStoredProfile(stored, { ...defaults, timeZone: 'Asia/Shanghai' })).toEqual({
      settings: {
        version: 1,
        preferences: { interfaceLanguage: 'en', aiLanguage: 'zh-Hant-TW', timeZone: 'Asia/Shanghai', country: 'CN' },
        privacy: {},
        notification: {},
      },
    });
  });

  it.each([
    ['not JSON', '{"version":1,', /not JSON/],
    ['not an object', '[1,2]', /not a JSON object/],
    ['without a version', '{"preferences":{}}', /no valid version/],
    ['with an invalid field', '{"version":1,"preferences":{"timeZone":"Atlantis/Capital"}}', /preferences\.timeZone/],
  ])('falls back to the defaults with a warning for a profile %s', (_what, raw, problem) => {
    const result = parseStoredProfile(raw, defaults);
    expect(result.settings).toEqual(defaultProfile(defaults));
    expect(result.problem).toMatch(problem);
  });

  it('refuses a future version clearly, falling back to the defaults', () => {
    const result = parseStoredProfile('{"version":2,"preferences":{"aiLanguage":"de"}}', defaults);
    expect(result.settings.preferences.aiLanguage).toBe('en');
    expect(result.problem).toBe('stored profile has version 2, newer than this Palaver reads (1); upgrade Palaver to use it');
  });
});
