import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/domain/model.js';
import { ConversationCache } from '../../src/runtime/conversation-cache.js';

function message(seq: number, audience: 'display' | 'audit' = 'display'): StoredMessage {
  return {
    id: `m${seq}`, sessionId: 's1', seq, role: seq % 2 ? 'user' : 'assistant', audience, content: `#${seq}`, toolCalls: null, toolCallId: null,
    model: null, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, tokenEstimate: 5, cost: '0', currency: 'USD', correlationId: null, meta: null, createdAt: new Date(0),
  };
}

describe('ConversationCache', () => {
  it('keeps only the display messages a turn can send, newest last', () => {
    const cache = new ConversationCache({ maxEntries: 10, ttlMs: 60_000, historyLimit: 3 });
    cache.rememberHistory('s1', [message(1), message(2), message(3, 'audit'), message(4), message(5)]);
    expect(cache.history('s1')!.map((m) => m.seq)).toEqual([2, 4, 5]);
  });

  it('keeps no history when the agent sends none', () => {
    const cache = new ConversationCache({ maxEntries: 10, ttlMs: 60_000, historyLimit: 0 });
    cache.rememberHistory('s1', [message(1), message(2)]);
    expect(cache.history('s1')).toEqual([]);
  });

  it('forgets entries after their time to live, so other writers are seen', () => {
    let now = 1_000;
    const cache = new ConversationCache({ maxEntries: 10, ttlMs: 20, historyLimit: 5, now: () => now });
    cache.rememberState('u1', { version: 3, state: { role: null, responseChainId: null, recentToolCalls: [], flows: {} } });
    now += 19;
    expect(cache.state('u1')?.version).toBe(3);
    now += 2;
    expect(cache.state('u1')).toBeUndefined();
  });
});
