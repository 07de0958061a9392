/**
 * Phrases that hand a conversation to a person without asking the model (`operators.handoff.phrases`): "operator",
 * "живой человек", "人工客服". A phrase matches as whole words, in any case, anywhere in the message; in a script
 * written without spaces between words (Chinese, Japanese, Thai, …) it matches as a plain substring, since there
 * are no word edges to look for.
 */

/** A phrase prepared for matching. */
export interface HandoffPhrase {
  /** As configured, trimmed: the handoff's reason when it matches. */
  readonly phrase: string;
  readonly pattern: RegExp;
}

const UNSPACED_SCRIPT =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\p{Script=Tibetan}]/u;

/** Letters, marks, digits and `_`: what a word is made of, in any script. */
const WORD_EDGE_BEFORE = '(?<![\\p{L}\\p{M}\\p{N}_])';
const WORD_EDGE_AFTER = '(?![\\p{L}\\p{M}\\p{N}_])';

/** Both sides compare in one form: composed, lower case in any script. */
function normalise(text: string): string {
  return text.normalize('NFC').toLowerCase();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** The configured phrases prepared once (duplicates and empty ones dropped). */
export function handoffPhraseSet(phrases: readonly string[]): readonly HandoffPhrase[] {
  const seen = new Set<string>();
  const prepared: HandoffPhrase[] = [];
  for (const raw of phrases) {
    const phrase = raw.trim();
    const words = normalise(phrase).split(/\s+/u).filter(Boolean);
    const key = words.join(' ');
    if (key === '' || seen.has(key)) continue;
    seen.add(key);
    // Words may be apart by any run of white space in the message.
    const body = words.map(escapeRegExp).join('\\s+');
    const pattern = UNSPACED_SCRIPT.test(phrase) ? new RegExp(body, 'u') : new RegExp(`${WORD_EDGE_BEFORE}${body}${WORD_EDGE_AFTER}`, 'u');
    prepared.push({ phrase, pattern });
  }
  return prepared;
}

/** The first configured phrase the message contains, or undefined. */
export function handoffPhraseIn(text: string, phrases: readonly HandoffPhrase[]): string | undefined {
  if (phrases.length === 0 || text === '') return undefined;
  const normalised = normalise(text);
  return phrases.find(({ pattern }) => pattern.test(normalised))?.phrase;
}
