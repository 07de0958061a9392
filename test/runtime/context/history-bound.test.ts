import { afterEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../../src/domain/model.js';
import { estimateTokens } from '../../../src/domain/token-estimate.js';
import { boundHistory } from '../../../src/runtime/context/history.js';
import { createHarness, type Harness } from '../../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A user message of exactly `length` ASCII characters: 4 + length / 4 estimated tokens. */
const sized = (label: string, length: number): string => `${label} `.padEnd(length, '.');

/** What the model received in a call, as "role: first words". */
function seenIn(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string[] {
  return call.messages.map((item) => (item.type === 'message' ? `${item.role}: ${item.content!.replace(/ \.+$/, '')}` : item.type));
}

describe('earlier history bounded by estimated tokens', () => {
  it('sends the newest whole messages that fit the token bound, always with the new message, from the cache and after a restart', async () => {
    harness = await createHarness(() => ({ text: 'ok' }));
    const config = { agent: { historyTokenLimit: 100 } };
    const first = await harness.start(config);
    // Each user message is estimated at 44 tokens, each reply ("ok") at 5.
    for (let turn = 1; turn <= 5; turn += 1) await first.chat({ userId: 'tess', text: sized(`message ${turn}`, 160) });
    expect(estimateTokens(sized('message 1', 160))).toBe(44);
    expect(estimateTokens('ok')).toBe(5);

    // A new message far over the bound on its own: it is sent whole, the earlier history beside it stays bounded.
    await first.chat({ userId: 'tess', text: sized('message 6', 1000) });
    // Newest first: 5 + 44 + 5 + 44 = 98 fit in 100; the next reply would make 103.
    expect(seenIn(harness.model.calls[5]!)).toEqual(['user: message 4', 'assistant: ok', 'user: message 5', 'assistant: ok', 'user: message 6']);
    await first.close();

    // After a restart the history comes from the store: the reply fits, message 6 (254 tokens) does not, and
    // nothing older is sent past it, so the conversation is never sent with a gap.
    const second = await harness.start(config);
    await second.chat({ userId: 'tess', text: 'message 7' });
    expect(seenIn(harness.model.calls[6]!)).toEqual(['assistant: ok', 'user: message 7']);
  });

  it('applies whichever bound is stricter, and no token bound at 0', async () => {
    harness = await createHarness(() => ({ text: 'ok' }));
    const counted = await harness.start({ agent: { historyLimit: 3, historyTokenLimit: 1000 } });
    for (let turn = 1; turn <= 4; turn += 1) await counted.chat({ userId: 'uma', text: sized(`message ${turn}`, 160) });
    expect(seenIn(harness.model.calls[3]!)).toEqual(['assistant: ok', 'user: message 3', 'assistant: ok', 'user: message 4']);
    await counted.close();

    const unbounded = await harness.start({ agent: { historyTokenLimit: 0 } });
    await unbounded.chat({ userId: 'uma', text: 'message 5' });
    expect(seenIn(harness.model.calls[4]!)).toHaveLength(9);
  });
});

describe('boundHistory', () => {
  const message = (seq: number, tokenEstimate: number): StoredMessage => ({
    id: `m${seq}`,
    sessionId: 's1',
    seq,
    role: seq % 2 ? 'user' : 'assistant',
    audience: 'display',
    content: `#${seq}`,
    toolCalls: null,
    toolCallId: null,
    model: null,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    tokenEstimate,
    cost: '0',
    currency: 'USD',
    correlationId: null,
    meta: null,
    createdAt: new Date(0),
  });
  const seqs = (messages: readonly StoredMessage[]): number[] => messages.map((m) => m.seq);

  it('keeps the newest messages within both bounds, never skipping one to fit an older one', () => {
    const history = [message(1, 10), message(2, 10), message(3, 50), message(4, 10), message(5, 10)];
    expect(seqs(boundHistory(history, { historyLimit: 10, historyTokenLimit: 70 }))).toEqual([3, 4, 5]);
    expect(seqs(boundHistory(history, { historyLimit: 10, historyTokenLimit: 69 }))).toEqual([4, 5]);
    expect(seqs(boundHistory(history, { historyLimit: 2, historyTokenLimit: 1000 }))).toEqual([4, 5]);
    expect(seqs(boundHistory(history, { historyLimit: 10, historyTokenLimit: 0 }))).toEqual([1, 2, 3, 4, 5]);
    expect(seqs(boundHistory(history, { historyLimit: 10, historyTokenLimit: 9 }))).toEqual([]);
    expect(seqs(boundHistory(history, { historyLimit: 0, historyTokenLimit: 0 }))).toEqual([]);
  });
});
