import { describe, expect, it } from 'vitest';
import { capToolResult, capToolText } from '../../src/domain/tool-result-cap.js';

describe('the tool result cap', () => {
  it('keeps text within the cap, and cuts longer text with a notice of how much was cut', () => {
    expect(capToolText('abcdef', 6)).toBe('abcdef');
    expect(capToolText('abcdefgh', 6)).toBe('abcdef\n…[truncated 2 chars]');
  });

  it('never cuts a surrogate pair in half', () => {
    // 'ab😀c': the emoji is two UTF-16 units at 2 and 3; a cut at 3 would leave half of it.
    expect(capToolText('ab😀cd', 3)).toBe('ab\n…[truncated 4 chars]');
  });

  it('returns the same result when nothing is over the cap', () => {
    const result = { content: 'Role set', structured: { role: 'client' }, isError: false };
    expect(capToolResult(result, 100)).toBe(result);
  });

  it('leaves out structured content when the text was cut or its JSON is over the cap', () => {
    const rows = Array.from({ length: 50 }, (_, id) => ({ id }));
    expect(capToolResult({ content: JSON.stringify(rows), structured: rows, isError: false }, 100)).toEqual({
      content: `${JSON.stringify(rows).slice(0, 100)}\n…[truncated ${JSON.stringify(rows).length - 100} chars]`,
      isError: false,
    });
    expect(capToolResult({ content: 'Fifty rows.', structured: rows, isError: false }, 100)).toEqual({ content: 'Fifty rows.', isError: false });
  });
});
