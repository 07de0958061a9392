import { parse as parseLanguageTag } from 'bcp-47';
import { createRequire } from 'node:module';
import { z } from 'zod';
import type { ProfileCodec, ProfileDefaults, ProfileFieldError, ProfilePreferences, ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';

export type { ProfileCodec, ProfileDefaults, ProfileFieldError, ProfilePreferences, ProfileSettings, ProfileUpdateResult } from '../domain/profile.js';

/** The one settings version this Palaver reads and writes. */
export const PROFILE_VERSION = 1;

/**
 * A BCP-47 tag in canonical case (`zh-hant-tw` → `zh-Hant-TW`), or undefined when it is not one. Telegram's `pt_BR`
 * spelling is read as `pt-BR`. Private-use-only and grandfathered irregular tags are refused: no language to speak.
 */
export function canonicalLanguageTag(tag: string): string | undefined {
  const parsed = parseLanguageTag(tag.trim().replaceAll('_', '-'));
  if (!parsed.language) return undefined;
  const parts = [parsed.language.toLowerCase(), ...parsed.extendedLanguageSubtags.map((subtag) => subtag.toLowerCase())];
  if (parsed.script) parts.push(parsed.script[0]!.toUpperCase() + parsed.script.slice(1).toLowerCase());
  if (parsed.region) parts.push(parsed.region.toUpperCase());
  parts.push(...parsed.variants.map((variant) => variant.toLowerCase()));
  for (const extension of parsed.extensions) parts.push(extension.singleton.toLowerCase(), ...extension.extensions.map((subtag) => subtag.toLowerCase()));
  if (parsed.privateuse.length > 0) parts.push('x', ...parsed.privateuse.map((subtag) => subtag.toLowerCase()));
  return parts.join('-');
}

/** IANA names by lower case, for their canonical spelling (`europe/kyiv` → `Europe/Kyiv`); made on first use. */
let zoneSpellings: Map<string, string> | undefined;

/**
 * The IANA zone name in its canonical spelling, or undefined when Intl does not know it. Offsets such as `+03:00`
 * are refused: a zone follows its daylight saving time, an offset does not.
 */
export function canonicalTimeZone(zone: string): string | undefined {
  if (!/^[A-Za-z]/.test(zone)) return undefined;
  // The default zone, checked at every start: asking Intl the first time loads ICU's zone data (~30 ms).
  if (zone === 'UTC') return zone;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat(undefined, { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  // Already spelled as Intl spells it (the usual case, and every start's defaults): no list of all zones needed.
  if (resolved === zone) return zone;
  zoneSpellings ??= new Map(['UTC', ...Intl.supportedValuesOf('timeZone')].map((name) => [name.toLowerCase(), name]));
  const listed = zoneSpellings.get(zone.toLowerCase());
  if (listed !== undefined) return listed;
  // A name this ICU knows only as an alias (Node 20 lists Europe/Kiev, not Europe/Kyiv): a spelling given with capitals
  // is kept; one in the wrong case takes Intl's spelling, so `europe/kyiv` is never stored as typed.
  return zone !== zone.toLowerCase() && zone !== zone.toUpperCase() ? zone : resolved;
}

interface CountryCodes {
  isValid(code: string): boolean;
}
let countryCodes: CountryCodes | undefined;

/**
 * True for an ISO 3166-1 alpha-2 code (any case) on i18n-iso-countries' list. Its package entry registers the
 * country names of ~80 languages (~10 MB); `index.js` holds the codes alone (a 12 kB table), needs no names to check
 * a code, and is required on first use, synchronously, so the settings schema stays synchronous.
 */
export function isCountryCode(code: string): boolean {
  if (!/^[A-Za-z]{2}$/.test(code)) return false;
  countryCodes ??= createRequire(import.meta.url)('i18n-iso-countries/index.js') as CountryCodes;
  return countryCodes.isValid(code.toUpperCase());
}

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
  readonly profiles: { readonly defaults: { readonly interfaceLanguage?: string | undefined; readonly aiLanguage?: string | undefined; readonly timeZone?: string | undefined; readonly country?: string | undefined } };
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
