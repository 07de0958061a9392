/**
 * What a person sees on a terminal `columns` wide: text, line feeds, carriage returns, wrapping, and the few escape
 * sequences the console channel writes (cursor up `ESC[nA`, back `ESC[nD`, erase to the end of the screen `ESC[J`, colours).
 */
export class TerminalScreen {
  readonly #columns: number;
  /** Rows on screen; `wrapped` rows continue the row above. */
  readonly #rows: Array<{ text: string; wrapped: boolean }> = [{ text: '', wrapped: false }];
  #row = 0;
  #column = 0;

  constructor(columns = 80) {
    this.#columns = columns;
  }

  write(data: string): void {
    for (let i = 0; i < data.length; i++) {
      const char = data[i]!;
      if (char === '\x1b') {
        const match = /^\x1b\[(\d*)([A-Za-z])/.exec(data.slice(i));
        if (!match) continue;
        i += match[0].length - 1;
        const n = match[1] === '' ? 1 : Number(match[1]);
        if (match[2] === 'A') this.#row = Math.max(0, this.#row - n);
        if (match[2] === 'D') this.#column = Math.max(0, this.#column - n);
        if (match[2] === 'J') {
          this.#rows[this.#row]!.text = this.#rows[this.#row]!.text.slice(0, this.#column);
          this.#rows.length = this.#row + 1;
        }
        continue;
      }
      if (char === '\r') this.#column = 0;
      else if (char === '\n') this.#newRow(false);
      else {
        if (this.#column === this.#columns) this.#newRow(true);
        const row = this.#rows[this.#row]!;
        row.text = row.text.slice(0, this.#column).padEnd(this.#column) + char + row.text.slice(this.#column + 1);
        this.#column++;
      }
    }
  }

  /** The screen's lines, wrapped rows joined again. */
  lines(): string[] {
    const lines: string[] = [];
    for (const row of this.#rows) {
      if (row.wrapped && lines.length > 0) lines[lines.length - 1] += row.text;
      else lines.push(row.text);
    }
    return lines;
  }

  #newRow(wrapped: boolean): void {
    this.#row++;
    this.#column = 0;
    if (this.#row >= this.#rows.length) this.#rows.push({ text: '', wrapped });
    else this.#rows[this.#row]!.wrapped = wrapped;
  }
}
