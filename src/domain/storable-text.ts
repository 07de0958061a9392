/**
 * Text every store accepts, on every dialect. Two things are not:
 * - NUL (U+0000): PostgreSQL refuses it in `text` and `jsonb`; SQLite stores it.
 * - Lone surrogates (half of a UTF-16 pair): not valid Unicode, so they have no UTF-8 form; one driver replaces them,
 *   another refuses the row, and what comes back differs per back end.
 *
 * Input from people is refused when it holds either ({@link unstorableReason}): no person types them. Model output
 * and tool results cannot be refused (the model was paid for, the tool's side effects are real), so they are made
 * storable once, where they enter Palaver ({@link toStorableText}, {@link toStorableJsonText}).
 */

/** A lone high surrogate (not followed by a low one), or a lone low surrogate (not preceded by a high one). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** U+FFFD REPLACEMENT CHARACTER: what every UTF-8 decoder shows for a character it could not read. */
export const REPLACEMENT_CHARACTER = '\uFFFD';

/** Why a string cannot be stored by every back end, or undefined when it can. */
export function unstorableReason(value: string): 'nul' | 'lone_surrogate' | undefined {
  if (value.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(value)) return 'lone_surrogate';
  return undefined;
}

/**
 * What becomes of a NUL: `drop` for text a person reads (a NUL is invisible there, so nothing is lost), `replace`
 * (by U+FFFD) for data a program reads — tool arguments and results — where silently joining "a\0b" into "ab" could
 * change its meaning.
 */
export type NulHandling = 'drop' | 'replace';

/**
 * `value` made storable: NULs dropped or replaced (see {@link NulHandling}), lone surrogates replaced by U+FFFD.
 * Well-formed text comes back as the same string (no copy).
 */
export function toStorableText(value: string, nul: NulHandling): string {
  if (unstorableReason(value) === undefined) return value;
  return value.replaceAll('\u0000', nul === 'drop' ? '' : REPLACEMENT_CHARACTER).replace(LONE_SURROGATES, REPLACEMENT_CHARACTER);
}

/** A JSON `\uXXXX` escape, or any other escape (consumed so that `\\u0000`, an escaped backslash, is not taken for one). */
const JSON_ESCAPES = /\\u([0-9a-fA-F]{4})|\\[\s\S]/g;

/**
 * JSON text (tool arguments as the model wrote them, valid or not) made storable: the characters themselves as
 * {@link toStorableText} with NULs replaced, and also `\u0000` and lone-surrogate escapes, which `JSON.parse` (and
 * PostgreSQL's `jsonb`) would turn back into the characters: each becomes `\uFFFD`. Everything else stays as written.
 */
export function toStorableJsonText(text: string): string {
  const raw = toStorableText(text, 'replace');
  if (!raw.includes('\\u')) return raw;
  const units: { index: number; length: number; code: number }[] = [];
  for (const match of raw.matchAll(JSON_ESCAPES)) {
    if (match[1] !== undefined) units.push({ index: match.index, length: match[0].length, code: Number.parseInt(match[1], 16) });
  }
  const bad = units.filter((unit, i) => {
    if (unit.code === 0) return true;
    const isHigh = unit.code >= 0xd800 && unit.code <= 0xdbff;
    const isLow = unit.code >= 0xdc00 && unit.code <= 0xdfff;
    const next = units[i + 1];
    const previous = units[i - 1];
    // A pair is two escapes written back to back.
    if (isHigh) return !(next && next.index === unit.index + unit.length && next.code >= 0xdc00 && next.code <= 0xdfff);
    if (isLow) return !(previous && previous.index + previous.length === unit.index && previous.code >= 0xd800 && previous.code <= 0xdbff);
    return false;
  });
  if (bad.length === 0) return raw;
  let out = '';
  let from = 0;
  for (const unit of bad) {
    out += `${raw.slice(from, unit.index)}\\ufffd`;
    from = unit.index + unit.length;
  }
  return out + raw.slice(from);
}
