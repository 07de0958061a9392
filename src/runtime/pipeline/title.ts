/** Longest session title, in characters (code points), the ellipsis included. */
export const MAX_TITLE_CHARS = 255;

/**
 * A session's title from its first input: the first line with text, cut on a word boundary with an ellipsis when it
 * is longer than {@link MAX_TITLE_CHARS} (a hard cut when the line has no space late enough, e.g. Chinese text).
 * Empty when the input has no text, so a later input may give the title instead.
 */
export function titleFrom(text: string): string {
  const line =
    text
      .split(/\r?\n/)
      .map((candidate) => candidate.trim())
      .find((candidate) => candidate !== '') ?? '';
  const chars = [...line];
  if (chars.length <= MAX_TITLE_CHARS) return line;
  const head = chars.slice(0, MAX_TITLE_CHARS - 1);
  const nextIsSpace = /\s/u.test(chars[MAX_TITLE_CHARS - 1]!);
  const lastSpace = head.findLastIndex((char) => /\s/u.test(char));
  // A word boundary in the first half would throw away too much: then the cut goes mid-word.
  const cut = nextIsSpace ? head : lastSpace >= MAX_TITLE_CHARS / 2 ? head.slice(0, lastSpace) : head;
  return `${cut.join('').trimEnd()}…`;
}
