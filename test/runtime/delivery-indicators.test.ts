import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { ReplyTarget } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { startDelivery } from '../../src/runtime/turn/deliver.js';
import type { TurnScope } from '../../src/runtime/turn/turn-context.js';

// What a person sees of a turn before its reply: the messages marked read and typing, shown once the turn's model
// request has left (in the next turn of the event loop), and never after the turn ended.

const target: ReplyTarget = { channel: 'phone', conversationId: 'c1', accountId: 'ann', inReplyTo: ['m1'], correlationId: 'corr', sessionId: 's1' };

/** The part of a turn the outbound side reads when the turn fails. */
function scopeFor(channel: MemoryChannel): TurnScope {
  return {
    channel,
    target,
    log: silentLogger(),
    journal: { streamedText: '' },
    progress: () => {},
    correlationId: 'corr',
    replyMessageId: 'r1',
  } as unknown as TurnScope;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('read marks and typing of a turn', () => {
  it('come in the next turn of the event loop, after what the turn does at once, and typing is renewed', () => {
    vi.useFakeTimers({ toFake: ['setImmediate', 'setInterval', 'clearInterval'] });
    const phone = new MemoryChannel({ name: 'phone', capabilities: { typing: true, readReceipts: true, typingIntervalMs: 100 } });
    startDelivery(scopeFor(phone));
    expect(phone.typingCalls).toEqual([]);
    expect(phone.markReadCalls).toEqual([]);
    vi.advanceTimersByTime(0);
    expect(phone.markReadCalls).toEqual([target]);
    expect(phone.typingCalls).toEqual([target]);
    vi.advanceTimersByTime(250);
    expect(phone.typingCalls).toHaveLength(3);
  });

  it('leaves no typing behind a turn that ended before it was shown, and still marks its messages read', () => {
    vi.useFakeTimers({ toFake: ['setImmediate', 'setInterval', 'clearInterval'] });
    const phone = new MemoryChannel({ name: 'phone', capabilities: { typing: true, readReceipts: true, typingIntervalMs: 100 } });
    startDelivery(scopeFor(phone)).fail(new Error('the store refused the turn'));
    vi.advanceTimersByTime(1_000);
    expect(phone.typingCalls).toEqual([]);
    expect(phone.markReadCalls).toEqual([target]);
    expect(phone.settled.map((end) => end.value.kind)).toEqual(['error']);
  });
});
