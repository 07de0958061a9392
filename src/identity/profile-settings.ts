import { z } from 'zod';
import { canonicalLanguageTag, canonicalTimeZone, checkTimeZone, isCountryCode } from '../i18n/locale-codes.js';
import type {
  ProfileCodec,
  ProfileDefaults,
  ProfileFieldError,
  ProfilePreferences,
  ProfileRead,
  ProfileSettings,
  ProfileUpdateResult,
  ProfileWrite,
} from '../domain/profile.js';

export type {
  ProfileCodec,
  ProfileDefaults,
  ProfileFieldError,
  ProfilePreferences,
  ProfileRead,
  ProfileSettings,
  ProfileUpdateResult,
  ProfileWrite,
} from '../domain/profile.js';

/** The one settings version this Palaver reads and writes; a stored row without `version` is this one. */
export const PROFILE_VERSION = 1;

type PreferenceKey = keyof ProfilePreferences;

/**
 * Each preference and its snake_case spelling: the same settings v1 as a Python service writes them
 * (`{"preferences": {"interface_language": "zh-CN", "ai_language": "zh-CN", "timezone": "Asia/Shanghai", "country": "CN"}}`).
 * Both are read and accepted; a row is written back in the spelling it already uses.
 */
const SNAKE_CASE: Readonly<Record<PreferenceKey, string>> = {
  interfaceLanguage: 'interface_language',
  aiLanguage: 'ai_language',
  timeZone: 'timezone',
  country: 'country',
};
const PREFERENCE_KEYS = Object.keys(SNAKE_CASE) as PreferenceKey[];

const languageTag = z.string().transform((tag, ctx) => {
  const canonical = canonicalLanguageTag(tag);
  if (canonical !== undefined) return canonical;
  ctx.addIssue({ code: 'custom', message: `"${tag}" is not a BCP-47 language tag (e.g. en, en-US, zh-CN, zh-Hant-TW)` });
  return z.NEVER;
});

const timeZone = z.string().transform((zone, ctx) => {
  const checked = checkTimeZone(zone);
  if ('zone' in checked) return checked.zone;
  ctx.addIssue({ code: 'custom', message: checked.problem });
  return z.NEVER;
});

const country = z.string().transform((code, ctx) => {
  if (isCountryCode(code)) return code.toUpperCase();
  ctx.addIssue({ code: 'custom', message: `"${code}" is not an ISO 3166-1 alpha-2 country code (e.g. CN, UA, US, DE)` });
  return z.NEVER;
});

/** Each preference's schema: what a stored value and an update are checked with. */
const PREFERENCE_SCHEMAS: { readonly [key in PreferenceKey]: z.ZodType<ProfilePreferences[key], unknown> } = {
  interfaceLanguage: languageTag,
  aiLanguage: languageTag,
  timeZone,
  country: country.nullable(),
};

/**
 * Free-form JSON objects (`privacy`, `notification`), as the store will read them back: a JSON round trip makes `-0`
 * the `0` it is stored as, so what an update applies is what every later read sees.
 */
const jsonObject = z.record(z.string(), z.json()).transform((value): Record<string, z.core.util.JSONType> => JSON.parse(JSON.stringify(value)));

/** The whole settings object, as a turn sees it (every preference present once defaults filled the gaps). */
export const profileSettingsSchema = z.strictObject({
  version: z.literal(PROFILE_VERSION, { error: `only version ${PROFILE_VERSION} is supported` }),
  preferences: z.strictObject(PREFERENCE_SCHEMAS),
  privacy: jsonObject,
  notification: jsonObject,
});

/** An update's preferences: any subset, in Palaver's spelling or the snake_case one (not both for one field). */
const preferencesUpdateSchema = z
  .strictObject(
    Object.fromEntries(
      PREFERENCE_KEYS.flatMap((key) => [
        [key, PREFERENCE_SCHEMAS[key].optional()],
        [SNAKE_CASE[key], PREFERENCE_SCHEMAS[key].optional()],
      ]),
    ) as Record<string, z.ZodOptional<z.ZodType<unknown, unknown>>>,
  )
  .transform((given, ctx) => {
    const preferences: Partial<Record<PreferenceKey, unknown>> = {};
    for (const key of PREFERENCE_KEYS) {
      const snake = SNAKE_CASE[key];
      if (key !== snake && given[key] !== undefined && given[snake] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [snake], message: `give either ${key} or ${snake}, not both` });
      }
      const value = given[key] !== undefined ? given[key] : given[snake];
      if (value !== undefined) preferences[key] = value;
    }
    return {
      preferences: preferences as Partial<ProfilePreferences>,
      snakeCase: PREFERENCE_KEYS.some((key) => key !== SNAKE_CASE[key] && SNAKE_CASE[key] in given),
    };
  });

/**
 * An update: any subset of the fields; what it leaves out stays as it is. `privacy` and `notification` are merged
 * key by key (a key given as null is removed).
 */
export const profileUpdateSchema = z.strictObject({
  version: z.literal(PROFILE_VERSION, { error: `only version ${PROFILE_VERSION} is supported` }).optional(),
  preferences: preferencesUpdateSchema.optional(),
  privacy: jsonObject.optional(),
  notification: jsonObject.optional(),
});

type ProfileChange = z.output<typeof profileUpdateSchema>;
type Row = Record<string, unknown>;

/** What the channel said about the person, used only to seed a profile that does not exist yet. */
export interface ProfileHints {
  /** Telegram's `language_code`, the browser's language. */
  readonly language?: string | null;
}

/**
 * A new profile: the channel's language hint (when it is a valid tag) for both languages, the rest from `defaults`.
 */
export function defaultProfile(defaults: ProfileDefaults, hints: ProfileHints = {}): ProfileSettings {
  const hinted = hints.language ? canonicalLanguageTag(hints.language) : undefined;
  return freezeSettings({
    version: PROFILE_VERSION,
    preferences: { ...defaults, ...(hinted === undefined ? {} : { interfaceLanguage: hinted, aiLanguage: hinted }) },
    privacy: {},
    notification: {},
  });
}

/**
 * Reads a stored profile, in Palaver's spelling or the snake_case one, a row without `version` as version 1. Never
 * throws. Missing fields come from `defaults`; so does a field that cannot be read, with `problem` naming it; unknown
 * keys are ignored (and kept in the row). A row that cannot be read at all (not JSON, not an object, another version,
 * `preferences`, `privacy` or `notification` not an object) gives the defaults, `problem` and `unreadable`. The
 * caller logs the problem; the row itself is never changed here.
 */
export function parseStoredProfile(raw: string, defaults: ProfileDefaults): ProfileRead {
  const opened = openRow(raw);
  if ('problem' in opened) return { settings: defaultProfile(defaults), problem: opened.problem, unreadable: true };
  return readRow(opened.row, defaults);
}

/**
 * Applies an update to `current`: the merged settings, or every refused field with its reason. Nothing is partly
 * applied: one bad field refuses the whole update.
 */
export function validateProfileUpdate(input: unknown, current: ProfileSettings): ProfileUpdateResult {
  const change = parseChange(input);
  if ('errors' in change) return { ok: false, errors: change.errors };
  const row = applyChange(settingsRow(current), change.change, false);
  return { ok: true, settings: readRow(row, current.preferences).settings };
}

/**
 * Applies an update to the stored row (`stored`; a profile seeded from `defaults` when there is none), changing only
 * the fields it names, in the spelling the row uses. Refused with `unreadable` when the row cannot be read at all:
 * such a row is only ever replaced as a whole ({@link replaceProfile}).
 */
export function updateStoredProfile(input: unknown, stored: string | undefined, defaults: ProfileDefaults): ProfileWrite {
  const change = parseChange(input);
  if ('errors' in change) return { ok: false, errors: change.errors };
  let row: Row;
  if (stored === undefined) row = settingsRow(defaultProfile(defaults));
  else {
    const opened = openRow(stored);
    if ('problem' in opened) {
      const message = `the stored profile cannot be read (${opened.problem}); it is kept as it is. Replace it as a whole to change it (PUT /admin/users/:userId/profile, palaver.profiles.replace).`;
      return { ok: false, errors: [{ path: '(root)', message }], unreadable: opened.problem };
    }
    row = opened.row;
  }
  return written(applyChange(row, change.change, false), defaults);
}

/**
 * A whole new row from `input` (the settings in either spelling, any subset), whatever is stored: fields it leaves
 * out take the defaults when read. Written in the spelling `input` uses.
 */
export function replaceProfile(input: unknown, defaults: ProfileDefaults): ProfileWrite {
  const change = parseChange(input);
  if ('errors' in change) return { ok: false, errors: change.errors };
  const row = applyChange({ version: PROFILE_VERSION, preferences: {}, privacy: {}, notification: {} }, change.change, change.snakeCase);
  return written(row, defaults);
}

function written(row: Row, defaults: ProfileDefaults): ProfileWrite {
  return { ok: true, settings: readRow(row, defaults).settings, row: JSON.stringify(row) };
}

function parseChange(input: unknown): { readonly change: ProfileChange; readonly snakeCase: boolean } | { readonly errors: ProfileFieldError[] } {
  const result = profileUpdateSchema.safeParse(input);
  if (!result.success) return { errors: fieldErrors(result.error) };
  return { change: result.data, snakeCase: result.data.preferences?.snakeCase ?? false };
}

/** The parsed row, or why it cannot be read at all. */
function openRow(raw: string): { readonly row: Row } | { readonly problem: string } {
  let stored: unknown;
  try {
    stored = JSON.parse(raw);
  } catch (error) {
    return { problem: `stored profile is not JSON: ${(error as Error).message}` };
  }
  if (!isRecord(stored)) return { problem: 'stored profile is not a JSON object' };
  const version = stored['version'];
  if (version !== undefined && version !== PROFILE_VERSION) {
    return {
      problem:
        typeof version === 'number' && version > PROFILE_VERSION
          ? `stored profile has version ${version}, newer than this Palaver reads (${PROFILE_VERSION}); upgrade Palaver to use it`
          : `stored profile has no valid version (found ${JSON.stringify(version)}, expected ${PROFILE_VERSION} or none)`,
    };
  }
  for (const part of ['preferences', 'privacy', 'notification']) {
    if (stored[part] !== undefined && !isRecord(stored[part])) return { problem: `stored profile's ${part} is not a JSON object` };
  }
  return { row: stored };
}

/** The settings of an opened row: each preference read on its own, a missing or unreadable one from `defaults`. */
function readRow(row: Row, defaults: ProfileDefaults): ProfileRead {
  const stored = isRecord(row['preferences']) ? row['preferences'] : {};
  const preferences: Record<string, unknown> = { ...defaults };
  const problems: string[] = [];
  for (const key of PREFERENCE_KEYS) {
    const snake = SNAKE_CASE[key];
    const values = [...new Set([key, snake])].filter((name) => Object.hasOwn(stored, name)).map((name) => stored[name]);
    if (values.length === 0) continue;
    if (values.length === 2 && values[0] !== values[1]) {
      problems.push(`preferences.${key}: ${key} and ${snake} differ (${JSON.stringify(values[0])}, ${JSON.stringify(values[1])})`);
      continue;
    }
    const result = PREFERENCE_SCHEMAS[key].safeParse(values[0]);
    if (result.success) preferences[key] = result.data;
    else problems.push(...fieldErrors(result.error).map((error) => `preferences.${key}: ${error.message}`));
  }
  const settings = freezeSettings({
    version: PROFILE_VERSION,
    preferences: preferences as unknown as ProfilePreferences,
    privacy: isRecord(row['privacy']) ? row['privacy'] : {},
    notification: isRecord(row['notification']) ? row['notification'] : {},
  });
  if (problems.length === 0) return { settings };
  return { settings, problem: `stored profile has fields that cannot be read, their defaults stand in: ${problems.join('; ')}` };
}

/**
 * `row` with `change` applied: version 1, each named preference set under the spelling(s) the row already has for it
 * (else the row's spelling: snake_case when it has only snake_case keys, or `snakeCase` for a row with none), and
 * `privacy` and `notification` merged key by key (null removes a key). Everything else stays as it is.
 */
function applyChange(row: Row, change: ProfileChange, snakeCase: boolean): Row {
  const preferences: Row = isRecord(row['preferences']) ? { ...row['preferences'] } : {};
  const camelKeys = PREFERENCE_KEYS.filter((key) => key !== SNAKE_CASE[key]);
  const rowIsSnake =
    camelKeys.some((key) => Object.hasOwn(preferences, SNAKE_CASE[key])) || (snakeCase && !camelKeys.some((key) => Object.hasOwn(preferences, key)));
  for (const [key, value] of Object.entries(change.preferences?.preferences ?? {}) as [PreferenceKey, unknown][]) {
    const present = [...new Set([key, SNAKE_CASE[key]])].filter((name) => Object.hasOwn(preferences, name));
    for (const name of present.length > 0 ? present : [rowIsSnake ? SNAKE_CASE[key] : key]) preferences[name] = value;
  }
  const next: Row = { version: PROFILE_VERSION, ...row, preferences };
  if (change.privacy !== undefined) next['privacy'] = mergeObject(row['privacy'], change.privacy);
  if (change.notification !== undefined) next['notification'] = mergeObject(row['notification'], change.notification);
  return next;
}

/** `base` with the keys of `patch` set, those given as null removed (JSON merge patch, one level deep). */
function mergeObject(base: unknown, patch: Readonly<Record<string, unknown>>): Row {
  const entries = Object.entries(isRecord(base) ? base : {}).filter(([key]) => !Object.hasOwn(patch, key));
  // fromEntries defines own properties: a key such as "__proto__" stays data, never a prototype.
  return Object.fromEntries([...entries, ...Object.entries(patch).filter(([, value]) => value !== null)]);
}

/** Settings as the row Palaver writes (its own spelling, every field present). */
function settingsRow(settings: ProfileSettings): Row {
  return { version: settings.version, preferences: { ...settings.preferences }, privacy: settings.privacy, notification: settings.notification };
}

function fieldErrors(error: z.ZodError): ProfileFieldError[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || '(root)', message: issue.message }));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function freezeSettings(settings: ProfileSettings): ProfileSettings {
  return Object.freeze({
    version: settings.version,
    preferences: Object.freeze({ ...settings.preferences }),
    privacy: deepFreeze(structuredClone(settings.privacy)),
    notification: deepFreeze(structuredClone(settings.notification)),
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The codec the runtime reads, seeds, updates and replaces profiles with, over `defaults`. */
export function profileCodec(defaults: ProfileDefaults): ProfileCodec {
  return {
    parse: (raw) => parseStoredProfile(raw, defaults),
    seed: (languageHint) => defaultProfile(defaults, { language: languageHint }),
    update: (input, stored) => updateStoredProfile(input, stored, defaults),
    replace: (input) => replaceProfile(input, defaults),
  };
}

/**
 * The defaults of new profiles from config: `profiles.defaults`, else `agent.language` and `agent.timezone` (kept
 * as they are when they are not valid settings, so an old config still starts).
 */
export function profileDefaultsFrom(config: {
  readonly agent: { readonly language: string; readonly timezone: string };
  readonly profiles: {
    readonly defaults: {
      readonly interfaceLanguage?: string | undefined;
      readonly aiLanguage?: string | undefined;
      readonly timeZone?: string | undefined;
      readonly country?: string | undefined;
    };
  };
}): ProfileDefaults {
  const { defaults } = config.profiles;
  const interfaceLanguage = defaults.interfaceLanguage ?? config.agent.language;
  const aiLanguage = defaults.aiLanguage ?? interfaceLanguage;
  const timeZone = defaults.timeZone ?? config.agent.timezone;
  return {
    interfaceLanguage: canonicalLanguageTag(interfaceLanguage) ?? interfaceLanguage,
    aiLanguage: canonicalLanguageTag(aiLanguage) ?? aiLanguage,
    timeZone: canonicalTimeZone(timeZone) ?? timeZone,
    country: defaults.country === undefined ? null : defaults.country.toUpperCase(),
  };
}
