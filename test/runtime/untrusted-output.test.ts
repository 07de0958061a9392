import { describe, expect, it } from 'vitest';
import type { ModelResponse } from '../../src/domain/ports/model-provider.js';
import { storableToolResults, toStorableResponse } from '../../src/runtime/untrusted-output.js';
import { byAttempts, retryDelayMs } from '../../src/runtime/turn/turn-attempts.js';

const usage = { inputTokens: 1, outputTokens: 1 } as ModelResponse['usage'];

describe('model output made storable where it enters', () => {
  it('normalises every field of a response that is stored or acted on, and passes clean ones through', () => {
    const response: ModelResponse = {
      model: 'm\u0000',
      text: 'hi\u0000 \uD800',
      toolCalls: [{ callId: 'c\u0000', name: 'n\uDC00', arguments: '{"a":"\\u0000"}' }],
      hostedToolCalls: [{ serverLabel: 's\u0000', name: 'h', arguments: '{"b":"\\ud800"}', output: 'o\u0000', error: null }],
      usage,
      responseId: 'r\u0000',
    };
    expect(toStorableResponse(response, 1_000)).toEqual({
      model: 'm\uFFFD',
      text: 'hi \uFFFD',
      toolCalls: [{ callId: 'c\uFFFD', name: 'n\uFFFD', arguments: '{"a":"\\ufffd"}' }],
      hostedToolCalls: [{ serverLabel: 's\uFFFD', name: 'h', arguments: '{"b":"\\ufffd"}', output: 'o\uFFFD', error: null }],
      usage,
      responseId: 'r\uFFFD',
    });
    const clean: ModelResponse = { model: 'm', text: 'ok', toolCalls: [], usage };
    expect(toStorableResponse(clean, 1_000)).toEqual(clean);
  });

  it('replaces NUL in a tool result with U+FFFD', async () => {
    const wrapper = storableToolResults(1_000);
    const result = await wrapper({ request: {} as never, signal: undefined }, async () => ({
      callId: 'c',
      content: 'a\u0000b',
      isError: false,
      effects: {},
      durationMs: 1,
    }));
    expect(result.content).toBe('a\uFFFDb');
  });

  it('cuts the output of a hosted MCP call to the tool result cap, with the notice', () => {
    const response: ModelResponse = {
      model: 'm',
      text: 'ok',
      toolCalls: [],
      hostedToolCalls: [{ serverLabel: 's', name: 'h', arguments: '{}', output: 'o'.repeat(150), error: null }],
      usage,
    };
    expect(toStorableResponse(response, 100).hostedToolCalls?.[0]?.output).toBe(`${'o'.repeat(100)}\n…[truncated 50 chars]`);
  });
});

describe('turn attempts', () => {
  it('waits a third of a lease, doubling, at most ten minutes', () => {
    expect([1, 2, 3].map((attempts) => retryDelayMs(15_000, attempts))).toEqual([5_000, 10_000, 20_000]);
    expect(retryDelayMs(15_000, 50)).toBe(600_000);
    expect(retryDelayMs(100, 1)).toBe(50);
  });

  it('sets apart the messages whose attempts are spent', () => {
    const item = (attempts: number) => ({ inbound: { attempts } });
    const { due, exhausted } = byAttempts([item(1), item(3), item(4)], 3);
    expect(due.map((entry) => entry.inbound.attempts)).toEqual([1, 3]);
    expect(exhausted.map((entry) => entry.inbound.attempts)).toEqual([4]);
  });
});
