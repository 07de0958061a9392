import { z } from 'zod';
import { canonicalLanguageTag, canonicalTimeZone, isCountryCode } from '../i18n/locale-codes.js';
import type { ProfileCodec, ProfileDefaults, ProfileFieldError, ProfilePreferences, ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';

export type { ProfileCodec, ProfileDefaults, ProfileFieldError, ProfilePreferences, ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';

/** The one settings version this Palaver reads and writes. */
export const PROFILE_VERSION = 1;

const languageTag = z.string().transform((tag, ctx) => {
  const canonical = canonicalLanguageTag(tag);
  if (canonical !== undefined) return canonical;
  ctx.addIssue({ code: 'custom', message: `"${tag}" is not a BCP-47 language tag (e.g. en, en-US, zh-Hant-TW)` });
  return z.NEVER;
});

const timeZone = z.string().transform((zone, ctx) => {
  const canonical = canonicalTimeZone(zone);
  if (canonical !== undefined) return canonical;
  ctx.addIssue({ code: 'custom', message: `"${zone}" is not an IANA time zone (e.g. Europe/Kyiv, America/New_York, UTC)` });
  return z.NEVER;
});

const country = z.string().transform((code, ctx) => {
  if (isCountryCode(code)) return code.toUpperCase();
  ctx.addIssue({ code: 'custom', message: `"${code}" is not an ISO 3166-1 alpha-2 country code (e.g. UA, US, DE)` });
  return z.NEVER;
});

const preferencesSchema = z.strictObject({
  interfaceLanguage: languageTag,
  aiLanguage: languageTag,
  timeZone,
  country: country.nullable(),
});

/** The whole settings object, as stored (every field present once defaults filled the gaps). */
export const profileSettingsSchema = z.strictObject({
  version: z.literal(PROFILE_VERSION, { error: `only version ${PROFILE_VERSION} is supported` }),
  preferences: preferencesSchema,
  privacy: z.strictObject({}),
  notification: z.strictObject({}),
});

/** An update: any subset of the fields; what it leaves out stays as it is. */
export const profileUpdateSchema = z.strictObject({
  version: z.literal(PROFILE_VERSION, { error: `only version ${PROFILE_VERSION} is supported` }).optional(),
  preferences: preferencesSchema.partial().optional(),
  privacy: z.strictObject({}).optional(),
  notification: z.strictObject({}).optional(),
});

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
 * Reads a stored profile through the schema, filling missing fields from `defaults`. Never throws: unreadable JSON,
 * an invalid field or a version this Palaver does not know give the defaults back with `problem` saying why (the
 * caller logs it; the stored row is left for a person to look at).
 */
export function parseStoredProfile(raw: string, defaults: ProfileDefaults): { readonly settings: ProfileSettings; readonly problem?: string } {
  const fallback = (problem: string) => ({ settings: defaultProfile(defaults), problem });
  let stored: unknown;
  try {
    stored = JSON.parse(raw);
  } catch (error) {
    return fallback(`stored profile is not JSON: ${(error as Error).message}`);
  }
  if (!isRecord(stored)) return fallback('stored profile is not a JSON object');
  if (stored['version'] !== PROFILE_VERSION) {
    const version = stored['version'];
    return fallback(
      typeof version === 'number' && version > PROFILE_VERSION
        ? `stored profile has version ${version}, newer than this Palaver reads (${PROFILE_VERSION}); upgrade Palaver to use it`
        : `stored profile has no valid version (found ${JSON.stringify(version) ?? 'none'}, expected ${PROFILE_VERSION})`,
    );
  }
  const preferences = isRecord(stored['preferences']) ? stored['preferences'] : {};
  const result = profileSettingsSchema.safeParse({ privacy: {}, notification: {}, ...stored, preferences: { ...defaults, ...preferences } });
  if (!result.success) return fallback(`stored profile is invalid: ${describeErrors(fieldErrors(result.error))}`);
  return { settings: freezeSettings(result.data) };
}

/**
 * Applies an update to `current`: the merged settings, or every refused field with its reason. Nothing is partly
 * applied: one bad field refuses the whole update.
 */
export function validateProfileUpdate(input: unknown, current: ProfileSettings): ProfileUpdateResult {
  const result = profileUpdateSchema.safeParse(input);
  if (!result.success) return { ok: false, errors: fieldErrors(result.error) };
  const update = result.data;
  // Only the fields the update names: an absent key must not blank the current value.
  const changes = Object.fromEntries(Object.entries(update.preferences ?? {}).filter(([, value]) => value !== undefined));
  const preferences: ProfilePreferences = { ...current.preferences, ...changes };
  return { ok: true, settings: freezeSettings({ ...current, preferences }) };
}

function fieldErrors(error: z.ZodError): ProfileFieldError[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || '(root)', message: issue.message }));
}

function describeErrors(errors: readonly ProfileFieldError[]): string {
  return errors.map((error) => `${error.path}: ${error.message}`).join('; ');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function freezeSettings(settings: ProfileSettings): ProfileSettings {
  return Object.freeze({
    version: settings.version,
    preferences: Object.freeze({ ...settings.preferences }),
    privacy: Object.freeze({}),
    notification: Object.freeze({}),
  });
}

/** The codec the runtime reads, seeds and updates profiles with, over `defaults`. */
export function profileCodec(defaults: ProfileDefaults): ProfileCodec {
  return {
    parse: (raw) => parseStoredProfile(raw, defaults),
    seed: (languageHint) => defaultProfile(defaults, { language: languageHint }),
    update: validateProfileUpdate,
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
