import { parse as parseLanguageTag } from 'bcp-47';
import { createRequire } from 'node:module';

// The canonical spelling of the codes a locale is made of. Both the configuration (defaults given by the operator)
// and the identity layer (settings a user changes) check codes with these, so they live below both.

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
