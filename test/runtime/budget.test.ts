import { describe, expect, it } from 'vitest';
import { dayIn } from '../../src/runtime/budget.js';
import { inputTokensAtMost, promptTokensAtMost } from '../../src/runtime/prompt-bound.js';

describe('the most tokens a prompt can take', () => {
  const request = (content: string) => ({ instructions: 'Be brief.', input: [{ type: 'message' as const, role: 'user' as const, content }], tools: [] });

  it('counts every UTF-8 byte as a token at most, so no script or emoji is under-counted', () => {
    // 'Привет' is 12 bytes, '你好' 6, '👋' 4: a byte-level tokenizer cannot need more tokens than bytes.
    const ascii = promptTokensAtMost(request('hello'));
    expect(promptTokensAtMost(request('Привет'))).toBe(ascii - 5 + 12);
    expect(promptTokensAtMost(request('你好👋'))).toBe(ascii - 5 + 10);
  });

  it('grows with tools, structured output and every item of input', () => {
    const plain = promptTokensAtMost(request('hi'));
    const withTool = promptTokensAtMost({ ...request('hi'), tools: [{ name: 'lookup', description: 'Finds an order', parameters: { type: 'object' } }] });
    expect(withTool).toBeGreaterThan(plain + 'Finds an order'.length);
    const withOutput = promptTokensAtMost({ ...request('hi'), output: { name: 'plan', schema: { type: 'object', properties: { x: { type: 'string' } } } } });
    expect(withOutput).toBeGreaterThan(plain + 20);
    expect(inputTokensAtMost([{ type: 'tool_result', callId: 'c1', output: 'x'.repeat(1000) }])).toBeGreaterThan(1000);
  });
});

describe('the budget day', () => {
  it("is the calendar day in the user's time zone", () => {
    const at = new Date('2026-03-01T23:30:00Z');
    expect(dayIn('UTC', at)).toBe('2026-03-01');
    expect(dayIn('Asia/Shanghai', at)).toBe('2026-03-02');
    expect(dayIn('America/New_York', at)).toBe('2026-03-01');
  });
});
