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

const ZONE_EXAMPLES = 'e.g. Asia/Shanghai, America/Chicago, Asia/Kolkata, Europe/Kyiv or UTC';

/**
 * An IANA zone name in its canonical spelling, or why the text is not one. Only `Area/Location` names (and `UTC`)
 * are zones: abbreviations (`CST`, `IST`, `EST`, `GMT`) are refused, never mapped to some zone (ICU would read `CST`
 * as America/Chicago, though it is China's time too), and so are offsets (`GMT+8`, `UTC+08:00`, `+03:00`: a zone
 * follows its daylight saving time, an offset does not). IANA's own fixed-offset names (`Etc/GMT-8`) are names and
 * are accepted.
 */
export function checkTimeZone(zone: string): { readonly zone: string } | { readonly problem: string } {
  if (zone === 'UTC' || zone.toLowerCase() === 'utc') return { zone: 'UTC' };
  if (/^\s*(?:(?:UTC|GMT|UT)\s*)?[+\-\u2212]\s*\d/i.test(zone)) {
    return { problem: `"${zone}" is an offset, not a time zone: an offset does not follow daylight saving time. Give the IANA zone name (${ZONE_EXAMPLES})` };
  }
  if (/^[A-Za-z][A-Za-z0-9+-]*$/.test(zone)) {
    return {
      problem: `"${zone}" is not an IANA time zone name (Area/City): abbreviations such as CST, IST or EST stand for different zones in different countries and are never read as one. Give the zone's IANA name (${ZONE_EXAMPLES})`,
    };
  }
  const canonical = zone.includes('/') ? canonicalZoneName(zone) : undefined;
  if (canonical !== undefined) return { zone: canonical };
  return { problem: `"${zone}" is not an IANA time zone (${ZONE_EXAMPLES})` };
}

/** The IANA zone name in its canonical spelling, or undefined when it is not one ({@link checkTimeZone} says why). */
export function canonicalTimeZone(zone: string): string | undefined {
  const checked = checkTimeZone(zone);
  return 'zone' in checked ? checked.zone : undefined;
}

function canonicalZoneName(zone: string): string | undefined {
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
