import { toStorableText } from './storable-text.js';

/** The longest handoff reason kept (in UTF-16 units, as the wire and the store count); a longer one is cut. */
export const MAX_HANDOFF_REASON_CHARS = 500;

/**
 * A handoff's reason as Palaver keeps it: trimmed, storable on every back end, cut to {@link MAX_HANDOFF_REASON_CHARS}
 * without splitting a character. Undefined when `value` is not a string with something in it: a tool or the model
 * wrote something else, and the handoff is refused.
 */
export function handoffReason(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = toStorableText(value, 'drop').trim();
  if (text === '') return undefined;
  if (text.length <= MAX_HANDOFF_REASON_CHARS) return text;
  // Cut before a high surrogate that would lose its pair.
  const end = /[\uD800-\uDBFF]/.test(text[MAX_HANDOFF_REASON_CHARS - 1]!) ? MAX_HANDOFF_REASON_CHARS - 1 : MAX_HANDOFF_REASON_CHARS;
  return text.slice(0, end).trimEnd();
}
