/** A lone high surrogate (not followed by a low one), or a lone low surrogate (not preceded by a high one). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored by every back end, or undefined when it can: PostgreSQL refuses NUL in text, and a
 * lone surrogate is not valid UTF-8 (SQLite and PostgreSQL would store or refuse it differently).
 */
export function badTextReason(value: string): 'nul' | 'lone_surrogate' | undefined {
  if (value.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(value)) return 'lone_surrogate';
  return undefined;
}
