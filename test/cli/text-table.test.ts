import { describe, expect, it } from 'vitest';
import { displayWidth, renderTable, singleLine, truncate } from '../../src/cli/text-table.js';

describe("the console's tables", () => {
  it('measure CJK characters and emoji as two cells and combining marks as none', () => {
    expect(displayWidth('Olga')).toBe(4);
    expect(displayWidth('王小明')).toBe(6);
    expect(displayWidth('👍')).toBe(2);
    expect(displayWidth('👩‍👩‍👧')).toBe(2);
    expect(displayWidth('❤️')).toBe(2);
    expect(displayWidth('é')).toBe(1);
  });

  it('line up columns whatever the script, with no trailing spaces', () => {
    const table = renderTable(
      [{ header: 'NAME' }, { header: 'COST', align: 'right' }],
      [
        ['王小明', '0.0051'],
        ['Ann 👍', '12.5'],
      ],
    );
    expect(table.split('\n')).toEqual(['NAME      COST', '王小明  0.0051', 'Ann 👍    12.5']);
  });

  it('cut long cells with an ellipsis inside the column width, never through a character', () => {
    expect(truncate('abcdefgh', 5)).toBe('abcd…');
    expect(truncate('王小明王小明', 5)).toBe('王小…');
    expect(displayWidth(truncate('王小明王小明', 5))).toBeLessThanOrEqual(5);
  });

  it('keep what a person wrote from driving the terminal: escapes and line breaks become harmless', () => {
    const cell = singleLine('hi\u001b[2J\u001b]0;owned\u0007\nthere\r\u202eevil');
    expect(cell).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(cell).toBe('hi\ufffd[2J\ufffd]0;owned\ufffd there \ufffdevil');
  });
});
