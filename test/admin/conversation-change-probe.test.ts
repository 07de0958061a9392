import { describe, expect, it } from 'vitest';
import { conversationChangeProbe, sharedProbe } from '../../src/admin/conversation-change-probe.js';
import type { ConversationOverview, OperatorQueries } from '../../src/domain/ports/operator-queries.js';

describe("the dashboard's shared change probe", () => {
  it('asks the store once for every open page within its time to live, and again after it', async () => {
    let now = 0;
    let calls = 0;
    let release: (value: string) => void = () => undefined;
    const probe = sharedProbe(
      () => new Promise<string>((resolve) => ((calls += 1), (release = resolve))),
      500,
      () => now,
    );

    const first = [probe(), probe(), probe()];
    release('a');
    expect(await Promise.all(first)).toEqual(['a', 'a', 'a']);
    now = 499;
    expect(await probe()).toBe('a');
    expect(calls).toBe(1);

    now = 500;
    const later = probe();
    release('b');
    expect(await later).toBe('b');
    expect(calls).toBe(2);
  });
});

describe("the dashboard's conversation change probe", () => {
  it('changes when a conversation is handed over or taken, though nothing else changed', async () => {
    let conversation = {
      sessionId: 's1',
      lastMessage: null,
      updatedAt: new Date(1_000),
      waiting: 0,
      pausedAt: new Date(900),
      endedAt: null,
      status: 'completed',
      assignedTo: null,
      handoff: null,
    } as unknown as ConversationOverview;
    const queries = {
      conversations: async () => ({ items: [conversation], nextCursor: null }),
      depth: async () => ({ inbox: { waiting: 0, running: 0, paused: 0 }, outbox: { pending: 0, failed: 0 } }),
    } as unknown as OperatorQueries;
    const read = () => conversationChangeProbe(queries, { ttlMs: 0 })();
    const before = await read();
    conversation = { ...conversation, handoff: { reason: 'wants a person', source: 'model', requestedAt: new Date(950), takenBy: null } };
    const handedOver = await read();
    conversation = { ...conversation, assignedTo: 'Olena', handoff: { ...conversation.handoff!, takenBy: 'Olena' } };
    const taken = await read();
    expect(new Set([before, handedOver, taken]).size).toBe(3);
  });
});
