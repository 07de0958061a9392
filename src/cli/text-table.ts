// Plain padded columns for the terminal, measured in terminal cells: CJK characters and most emoji take two, combining
// marks none. Cells are single-line and free of control characters, so text a person sent (which may hold escape
// sequences) cannot move the cursor or recolour the operator's terminal.

/** One column of a {@link renderTable}. */
export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned. */
  readonly align?: 'left' | 'right';
  /** Cells wider than this many cells are cut with `…`; default 40. */
  readonly max?: number;
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Renders a header line and one line per row, columns separated by two spaces; no trailing spaces. */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const cells = rows.map((row) => columns.map((column, index) => truncate(singleLine(row[index] ?? ''), column.max ?? 40)));
  const widths = columns.map((column, index) => Math.max(displayWidth(column.header), ...cells.map((row) => displayWidth(row[index]!))));
  const line = (values: readonly string[]) =>
    values
      .map((value, index) => pad(value, widths[index]!, columns[index]!.align ?? 'left'))
      .join('  ')
      .trimEnd();
  return [line(columns.map((column) => column.header)), ...cells.map(line)].join('\n');
}

/** `text` with control characters (escape sequences included) made visible-safe and line breaks as spaces. */
export function singleLine(text: string): string {
  return safeText(text).replace(/\s+/g, ' ').trim();
}

/** `text` with every control character except the line break replaced, so it cannot drive the terminal. */
export function safeText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (char) => (char === '\t' ? ' ' : '\ufffd'));
}

/** How many terminal cells `text` takes. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const { segment } of segmenter.segment(text)) width += graphemeWidth(segment);
  return width;
}

/** `text` cut to at most `max` cells, ending in `…` when cut. */
export function truncate(text: string, max: number): string {
  if (displayWidth(text) <= max) return text;
  let out = '';
  let width = 0;
  for (const { segment } of segmenter.segment(text)) {
    const next = graphemeWidth(segment);
    if (width + next > max - 1) break;
    out += segment;
    width += next;
  }
  return `${out}…`;
}

function pad(text: string, width: number, align: 'left' | 'right'): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(text)));
  return align === 'right' ? fill + text : text + fill;
}

function graphemeWidth(grapheme: string): number {
  const code = grapheme.codePointAt(0)!;
  if (/^\p{Mark}+$/u.test(grapheme)) return 0;
  // An emoji presentation selector makes even a narrow pictograph (☀, ❤) take two cells.
  if (grapheme.includes('\ufe0f') || /\p{Emoji_Presentation}/u.test(grapheme)) return 2;
  return isWide(code) ? 2 : 1;
}

/** East Asian Wide and Fullwidth ranges (Unicode's EastAsianWidth W and F), enough for names and messages. */
function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf && code !== 0x303f) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}
