import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/domain/model.js';
import { ConversationCache } from '../../src/runtime/conversation-cache.js';

function message(seq: number, audience: 'display' | 'audit' = 'display'): StoredMessage {
  return {
    id: `m${seq}`,
    sessionId: 's1',
    seq,
    role: seq % 2 ? 'user' : 'assistant',
    audience,
    content: `#${seq}`,
    toolCalls: null,
    toolCallId: null,
    model: null,
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    tokenEstimate: 5,
    cost: '0',
    currency: 'USD',
    correlationId: null,
    meta: null,
    createdAt: new Date(0),
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

  it('forgets a relinked account in every conversation on every channel of its namespace, and no other account', () => {
    const cache = new ConversationCache({ maxEntries: 10, ttlMs: 60_000, historyLimit: 5 });
    const participant = (name: string) => ({ user: { id: name }, accounts: [], session: { id: `s-${name}` } }) as never;
    const key = (namespace: string, accountId: string, channel: string, conversationId: string) => ({ namespace, accountId, channel, conversationId });
    cache.rememberParticipant(key('telegram', 'ada', 'telegram-bot', 'chat-1'), participant('ada-1'));
    cache.rememberParticipant(key('telegram', 'ada', 'telegram-bot', 'group-7'), participant('ada-7'));
    cache.rememberParticipant(key('telegram', 'ada', 'telegram-user', 'chat-1'), participant('ada-user'));
    cache.rememberParticipant(key('telegram', 'adam', 'telegram-bot', 'chat-1'), participant('adam'));
    cache.rememberParticipant(key('console', 'ada', 'console', 'chat-1'), participant('console-ada'));
    expect(cache.participant(key('telegram', 'ada', 'telegram-bot', 'group-7'))).toEqual(participant('ada-7'));
    // The same chat id on another channel of the namespace is another conversation.
    expect(cache.participant(key('telegram', 'ada', 'telegram-user', 'chat-1'))).toEqual(participant('ada-user'));
    expect(cache.participant(key('telegram', 'ada', 'telegram-bot', 'chat-2'))).toBeUndefined();

    cache.forgetAccount('telegram', 'ada');
    expect(cache.participant(key('telegram', 'ada', 'telegram-bot', 'chat-1'))).toBeUndefined();
    expect(cache.participant(key('telegram', 'ada', 'telegram-bot', 'group-7'))).toBeUndefined();
    expect(cache.participant(key('telegram', 'ada', 'telegram-user', 'chat-1'))).toBeUndefined();
    expect(cache.participant(key('telegram', 'adam', 'telegram-bot', 'chat-1'))).toEqual(participant('adam'));
    expect(cache.participant(key('console', 'ada', 'console', 'chat-1'))).toEqual(participant('console-ada'));
  });

  it('forgets a profile, a history or a state on its own, so the next turn reads it from the store', () => {
    const cache = new ConversationCache({ maxEntries: 10, ttlMs: 60_000, historyLimit: 5 });
    const settings = {
      version: 1,
      preferences: { interfaceLanguage: 'en', aiLanguage: 'en', timeZone: 'UTC', country: null },
      privacy: {},
      notification: {},
    } as const;
    const state = { version: 1, state: { role: null, responseChainId: null, recentToolCalls: [], flows: {} } };
    for (const user of ['u1', 'u2']) {
      cache.rememberProfile(user, settings);
      cache.rememberState(user, state);
    }
    cache.rememberHistory('s1', [message(1)]);
    cache.rememberHistory('s2', [message(2)]);

    cache.forgetProfile('u1');
    expect([cache.profile('u1'), cache.profile('u2'), cache.state('u1')]).toEqual([undefined, settings, state]);
    cache.forgetState('u1');
    expect([cache.state('u1'), cache.state('u2')]).toEqual([undefined, state]);
    cache.forgetHistory('s1');
    expect([cache.history('s1'), cache.history('s2')?.length]).toEqual([undefined, 1]);
  });
});
