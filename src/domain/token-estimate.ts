/**
 * A cheap, deterministic estimate of how many tokens a message costs in a model's input, computed once when the
 * message is stored. No tokenizer: tokenizers differ per model, weigh megabytes and would make every append slower.
 * The estimate only has to bound the history sent, so it is rough by design and errs on the high side:
 * - ASCII (English, code, digits): ~4 characters per token, as BPE tokenizers of the GPT and Claude families average;
 * - other alphabetic scripts (Cyrillic, Greek, accented Latin, …): ~3 characters per token, as they split finer;
 * - CJK ideographs, kana, Hangul, full-width forms and astral characters (emoji): 1 token each;
 * - plus {@link MESSAGE_OVERHEAD_TOKENS} per message for the role and framing tokens of the chat format.
 */
export function estimateTokens(content: string, toolCallsJson: string | null = null): number {
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil((weightOf(content) + (toolCallsJson === null ? 0 : weightOf(toolCallsJson))) / WHOLE_TOKEN);
}

/** Tokens of a message's framing (role, separators) beyond its text. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

// Weights in twelfths of a token, so all three rates stay integers.
const WHOLE_TOKEN = 12;
const ASCII_WEIGHT = 3;
const ALPHABETIC_WEIGHT = 4;

/** The text's weight in twelfths of a token: one pass over its UTF-16 code units, no allocation. */
function weightOf(text: string): number {
  let weight = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x80) weight += ASCII_WEIGHT;
    // A surrogate pair (emoji, rare ideographs) counts as one token: its high half carries it, the low half nothing.
    else if (code >= 0xdc00 && code <= 0xdfff) continue;
    else if (code >= 0xd800 && code <= 0xdbff) weight += WHOLE_TOKEN;
    else if (isWide(code)) weight += WHOLE_TOKEN;
    else weight += ALPHABETIC_WEIGHT;
  }
  return weight;
}

/** CJK and other scripts a tokenizer spends about a token per character on. */
function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x11ff) || // Hangul Jamo
    (code >= 0x2e80 && code <= 0x9fff) || // CJK radicals, punctuation, kana, Bopomofo, ideographs
    (code >= 0xa960 && code <= 0xa97f) || // Hangul Jamo Extended-A
    (code >= 0xac00 && code <= 0xd7ff) || // Hangul syllables
    (code >= 0xf900 && code <= 0xfaff) || // CJK compatibility ideographs
    (code >= 0xfe30 && code <= 0xfe4f) || // CJK compatibility forms
    (code >= 0xff00 && code <= 0xffef) // full-width and half-width forms
  );
}
