import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import {
  defaultProfile,
  parseStoredProfile,
  replaceProfile,
  updateStoredProfile,
  validateProfileUpdate,
  type ProfileDefaults,
} from '../../src/identity/profile-settings.js';

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
    // The seed's spellings (seed 003): never stored as typed.
    ['zh_CN', 'zh-CN'],
    ['EN-us', 'en-US'],
    ['EN', 'en'],
    ['zh-TW', 'zh-TW'],
    ['ja-JP', 'ja-JP'],
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

  // ICU reads CST as America/Chicago and IST as Asia/Calcutta; China and Ireland would disagree. Never mapped.
  it.each(['CST', 'IST', 'EST', 'PST', 'BST', 'GMT', 'cst', 'PST8PDT', 'PRC'])('refuses the abbreviation %j instead of mapping it to some zone', (zone) => {
    const result = update({ timeZone: zone });
    expect(!result.ok && result.errors).toEqual([
      { path: 'preferences.timeZone', message: expect.stringMatching(/is not an IANA time zone name \(Area\/City\): abbreviations such as CST, IST or EST/) },
    ]);
  });

  it.each(['GMT+8', 'GMT-3', 'UTC+08:00', 'utc-5', '+08:00', '\u22123'])('refuses the offset %j: an offset is not a zone', (zone) => {
    const result = update({ timeZone: zone });
    expect(!result.ok && result.errors).toEqual([{ path: 'preferences.timeZone', message: expect.stringContaining('is an offset, not a time zone') }]);
  });

  it("accepts IANA names only: Area/City, UTC, and IANA's own fixed-offset names", () => {
    for (const zone of ['Asia/Shanghai', 'America/Chicago', 'utc', 'Etc/UTC', 'Etc/GMT-8']) expect(update({ timeZone: zone }).ok).toBe(true);
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

  it.each(['ZZ', 'zz', 'UKR', 'CHN', 'USA', '804', 'U', 'EU'])('refuses %j (not an alpha-2 code on the list)', (code) => {
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
    ['with a version that is not a number', '{"version":"1","preferences":{}}', /no valid version/],
    ['with preferences that are not an object', '{"version":1,"preferences":"zh-CN"}', /preferences is not a JSON object/],
    ['with privacy that is not an object', '{"privacy":[]}', /privacy is not a JSON object/],
  ])('falls back to the defaults for a profile %s, saying it is unreadable', (_what, raw, problem) => {
    const result = parseStoredProfile(raw, defaults);
    expect(result.settings).toEqual(defaultProfile(defaults));
    expect(result.problem).toMatch(problem);
    expect(result.unreadable).toBe(true);
  });

  it('reads the fields it can of a profile with an invalid one, the defaults standing in for that one alone', () => {
    const result = parseStoredProfile('{"version":1,"preferences":{"timeZone":"Atlantis/Capital","aiLanguage":"uk"}}', defaults);
    expect(result.settings.preferences).toEqual({ ...defaults, aiLanguage: 'uk' });
    expect(result.problem).toMatch(/preferences\.timeZone: "Atlantis\/Capital" is not an IANA time zone/);
    expect(result.unreadable).toBeUndefined();
  });

  it('refuses a future version clearly, falling back to the defaults', () => {
    const result = parseStoredProfile('{"version":2,"preferences":{"aiLanguage":"de"}}', defaults);
    expect(result.settings.preferences.aiLanguage).toBe('en');
    expect(result.problem).toBe('stored profile has version 2, newer than this Palaver reads (1); upgrade Palaver to use it');
  });
});

// Seed 003: ProfileSettings v1 as its Python services store it (snake_case, version optional, free-form privacy and
// notification objects).
const SEED_ROW = {
  version: 1,
  preferences: { interface_language: 'zh-CN', ai_language: 'zh-CN', timezone: 'Asia/Shanghai', country: 'CN' },
  privacy: { share_history: false },
  notification: { daily_digest: { hour: 9 } },
};

describe('profile settings: the snake_case shape (seed 003)', () => {
  it('reads a stored profile in the snake_case spelling, unknown privacy and notification keys kept', () => {
    expect(parseStoredProfile(JSON.stringify(SEED_ROW), defaults)).toEqual({
      settings: {
        version: 1,
        preferences: { interfaceLanguage: 'zh-CN', aiLanguage: 'zh-CN', timeZone: 'Asia/Shanghai', country: 'CN' },
        privacy: { share_history: false },
        notification: { daily_digest: { hour: 9 } },
      },
    });
  });

  it('reads a row without a version as version 1, and ignores keys it does not know', () => {
    const { version: _version, ...row } = SEED_ROW;
    const read = parseStoredProfile(JSON.stringify({ ...row, preferences: { ...row.preferences, theme: 'dark' }, owner: 'crm' }), defaults);
    expect(read.problem).toBeUndefined();
    expect(read.settings.version).toBe(1);
    expect(read.settings.preferences.timeZone).toBe('Asia/Shanghai');
  });

  it('reads a stored CST as unreadable in that field alone: the defaults stand in for the zone, the languages stay', () => {
    const read = parseStoredProfile(JSON.stringify({ ...SEED_ROW, preferences: { ...SEED_ROW.preferences, timezone: 'CST' } }), defaults);
    expect(read.settings.preferences).toEqual({ interfaceLanguage: 'zh-CN', aiLanguage: 'zh-CN', timeZone: 'UTC', country: 'CN' });
    expect(read.problem).toMatch(/preferences\.timeZone: "CST" is not an IANA time zone name/);
    expect(read.unreadable).toBeUndefined();
  });

  it('names a field the row spells both ways with different values', () => {
    const read = parseStoredProfile('{"preferences":{"timezone":"Asia/Shanghai","timeZone":"Europe/Kyiv","ai_language":"uk","aiLanguage":"uk"}}', defaults);
    expect(read.settings.preferences).toMatchObject({ timeZone: 'UTC', aiLanguage: 'uk' });
    expect(read.problem).toMatch(/preferences\.timeZone: timeZone and timezone differ/);
  });

  it('takes an update in either spelling, not both for one field', () => {
    expect(validateProfileUpdate({ version: 1, preferences: { interface_language: 'zh_CN', timezone: 'asia/shanghai', country: 'cn' } }, current)).toEqual({
      ok: true,
      settings: {
        version: 1,
        preferences: { interfaceLanguage: 'zh-CN', aiLanguage: 'en', timeZone: 'Asia/Shanghai', country: 'CN' },
        privacy: {},
        notification: {},
      },
    });
    expect(validateProfileUpdate({ preferences: { timezone: 'GMT+8' } }, current)).toMatchObject({ ok: false, errors: [{ path: 'preferences.timezone' }] });
    expect(validateProfileUpdate({ preferences: { timezone: 'UTC', timeZone: 'UTC' } }, current)).toEqual({
      ok: false,
      errors: [{ path: 'preferences.timezone', message: 'give either timeZone or timezone, not both' }],
    });
  });

  it('merges privacy and notification key by key, a null removing a key', () => {
    const first = validateProfileUpdate({ privacy: { share_history: false, analytics: true } }, current);
    const second = first.ok && validateProfileUpdate({ privacy: { analytics: null, region: 'cn' }, notification: { email: true } }, first.settings);
    expect(second).toMatchObject({ ok: true, settings: { privacy: { share_history: false, region: 'cn' }, notification: { email: true } } });
    expect(validateProfileUpdate({ privacy: 'none' }, current)).toMatchObject({ ok: false, errors: [{ path: 'privacy' }] });
  });

  it('changes only what an update names in a stored row, in the spelling the row uses', () => {
    const stored = JSON.stringify({ ...SEED_ROW, preferences: { ...SEED_ROW.preferences, theme: 'dark' }, owner: 'crm' });
    const result = updateStoredProfile({ preferences: { timeZone: 'Asia/Tokyo' }, privacy: { share_history: true } }, stored, defaults);
    expect(result.ok && JSON.parse(result.row)).toEqual({
      version: 1,
      preferences: { interface_language: 'zh-CN', ai_language: 'zh-CN', timezone: 'Asia/Tokyo', country: 'CN', theme: 'dark' },
      privacy: { share_history: true },
      notification: { daily_digest: { hour: 9 } },
      owner: 'crm',
    });
    expect(result.ok && result.settings.preferences).toEqual({ interfaceLanguage: 'zh-CN', aiLanguage: 'zh-CN', timeZone: 'Asia/Tokyo', country: 'CN' });
  });

  it('keeps a field it cannot read as stored until an update names it', () => {
    const stored = JSON.stringify({ preferences: { timezone: 'CST', ai_language: 'zh-CN' } });
    const other = updateStoredProfile({ preferences: { country: 'CN' } }, stored, defaults);
    expect(other.ok && JSON.parse(other.row)).toEqual({ version: 1, preferences: { timezone: 'CST', ai_language: 'zh-CN', country: 'CN' } });
    const fixed = updateStoredProfile({ preferences: { timeZone: 'Asia/Shanghai' } }, other.ok ? other.row : stored, defaults);
    expect(fixed.ok && JSON.parse(fixed.row).preferences.timezone).toBe('Asia/Shanghai');
  });

  it('refuses to update a row it cannot read at all, and replaces it only when told to', () => {
    const refused = updateStoredProfile({ preferences: { timeZone: 'Asia/Tokyo' } }, '{"version":2,"preferences":{}}', defaults);
    expect(refused).toMatchObject({ ok: false, unreadable: expect.stringContaining('version 2'), errors: [{ path: '(root)' }] });
    const replaced = replaceProfile(SEED_ROW, defaults);
    expect(replaced.ok && JSON.parse(replaced.row)).toEqual(SEED_ROW);
    const camel = replaceProfile({ preferences: { timeZone: 'Europe/Kyiv' } }, defaults);
    expect(camel.ok && JSON.parse(camel.row)).toEqual({ version: 1, preferences: { timeZone: 'Europe/Kyiv' }, privacy: {}, notification: {} });
    expect(camel.ok && camel.settings.preferences).toEqual({ ...defaults, timeZone: 'Europe/Kyiv' });
    expect(replaceProfile({ preferences: { timezone: 'IST' } }, defaults)).toMatchObject({ ok: false, errors: [{ path: 'preferences.timezone' }] });
  });

  it("stores a new profile in full, in Palaver's spelling, whatever spelling the first update uses", () => {
    const result = updateStoredProfile({ preferences: { timezone: 'Asia/Shanghai' } }, undefined, defaults);
    expect(result.ok && JSON.parse(result.row)).toEqual({
      version: 1,
      preferences: { interfaceLanguage: 'en', aiLanguage: 'en', timeZone: 'Asia/Shanghai', country: null },
      privacy: {},
      notification: {},
    });
  });
});

describe('config: zones as the profile checks them', () => {
  it('refuses an abbreviation or an offset as agent.timezone at start, naming why', () => {
    expect(() => parseConfig({ model: { name: 'm' }, agent: { timezone: 'CST' } })).toThrow(/agent\.timezone: "CST" is not an IANA time zone name/);
    expect(() => parseConfig({ model: { name: 'm' }, profiles: { defaults: { timeZone: 'GMT+8' } } })).toThrow(
      /profiles\.defaults\.timeZone: "GMT\+8" is an offset/,
    );
  });
});
