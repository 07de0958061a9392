/**
 * The row, counted from the row where `text` began, on which a terminal's cursor stands after writing `text`
 * `columns` wide. Terminals wrap lazily: after the last column the cursor stays put until the next character.
 * Every code point counts as one column, so wide characters (CJK, emoji) can make this undercount.
 */
export function cursorRow(text: string, columns: number): number {
  let row = 0;
  let column = 0;
  for (const char of text) {
    if (char === '\n') {
      row++;
      column = 0;
      continue;
    }
    if (column === columns) {
      row++;
      column = 0;
    }
    column++;
  }
  return row;
}
