import { describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/testing/index.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';
import { answer, FakeChannelContext } from './fake-pipeline.js';

function memoryDriver(channel: MemoryChannel): ChannelDriver {
  const errors = new Map<string, string[]>();
  const pending = new Map<string, number>();
  const errorsOf = (name: string): string[] => {
    const list = errors.get(name) ?? [];
    errors.set(name, list);
    return list;
  };
  const say = async (name: string, text: string): Promise<void> => {
    try {
      const said = await channel.say(text, { accountId: 'person', conversationId: name });
      if (said.status !== 'accepted') return;
      pending.set(name, (pending.get(name) ?? 0) + 1);
      void channel.reply(said).then(
        () => pending.set(name, pending.get(name)! - 1),
        (error: unknown) => {
          pending.set(name, pending.get(name)! - 1);
          errorsOf(name).push(error instanceof Error ? error.message : String(error));
        },
      );
    } catch (error) {
      errorsOf(name).push(error instanceof Error ? error.message : String(error));
    }
  };
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    conversationId: (name) => name,
    say,
    replies: (name) => channel.sent.filter((s) => s.target.conversationId === name).map((s) => s.value),
    errors: errorsOf,
    waiting: (name) => pending.get(name) ?? 0,
    sayAfterStop: say,
    close: async () => {},
  };
}

runChannelContract('memory', async () => memoryDriver(new MemoryChannel()));
runChannelContract('memory, streaming and split', async () =>
  memoryDriver(new MemoryChannel({ name: 'api', capabilities: { streaming: true, maxMessageChars: 50 } })),
);

describe('MemoryChannel', () => {
  it('says clearly that it must be started first', async () => {
    await expect(new MemoryChannel().say('hi')).rejects.toThrow(/not started/);
  });

  it('resolves the reply of every message of a batch with the one delivery', async () => {
    const channel = new MemoryChannel({ capabilities: { streaming: true } });
    const context = new FakeChannelContext();
    await channel.start(context);
    const first = await channel.say('one', { accountId: 'ann' });
    const second = await channel.say('two', { accountId: 'ann' });
    expect(first).toMatchObject({ status: 'accepted', messageId: 'm1' });
    expect(context.received.map((r) => r.message)).toMatchObject([
      { channel: 'memory', accountId: 'ann', conversationId: 'ann', text: 'one', messageId: 'm1' },
      { text: 'two', messageId: 'm2' },
    ]);
    const replies = Promise.all([channel.reply(first), channel.waitForReply('m2')]);
    await answer(
      channel,
      context,
      context.received.map((r) => r.message),
      { stream: ['Both.'], parts: ['Both', 'answered.'] },
    );
    const [a, b] = await replies;
    expect(a).toBe(b);
    expect(a.parts).toEqual(['Both', 'answered.']);
    expect(a.outcome.status).toBe('completed');
    expect(channel.sent.map((s) => s.value)).toEqual(['Both', 'answered.']);
    expect(channel.settled).toHaveLength(1);
    expect(channel.progressEvents.map((p) => p.value.type)).toEqual(['text_delta']);
  });

  it('hands out a reply asked for after its turn settled, once', async () => {
    const channel = new MemoryChannel();
    const context = new FakeChannelContext();
    await channel.start(context);
    const said = await channel.say('early');
    await answer(channel, context, [context.received[0]!.message], { parts: ['Answered before anyone asked.'] });
    await expect(channel.reply(said)).resolves.toMatchObject({ parts: ['Answered before anyone asked.'] });
  });

  it('passes its options into the inbound message and refuses reply() for a duplicate', async () => {
    const channel = new MemoryChannel({ name: 'api' });
    const context = new FakeChannelContext();
    await channel.start(context);
    context.duplicateNext();
    const said = await channel.say('again', {
      accountId: 'bob',
      conversationId: 'support',
      displayName: 'Bob',
      languageHint: 'de',
      dedupeKey: 'k1',
      messageId: 'x1',
    });
    expect(context.received[0]!.message).toEqual({
      channel: 'api',
      accountId: 'bob',
      conversationId: 'support',
      text: 'again',
      messageId: 'x1',
      displayName: 'Bob',
      languageHint: 'de',
      dedupeKey: 'k1',
    });
    expect(said.status).toBe('duplicate');
    await expect(channel.reply(said)).rejects.toThrow(/duplicate/);
  });

  it('rejects reply() with the turn error, and waitForReply() after its timeout', async () => {
    const channel = new MemoryChannel();
    const context = new FakeChannelContext();
    await channel.start(context);
    const said = await channel.say('break');
    const failure = new Error('store down');
    await answer(channel, context, [context.received[0]!.message], { parts: [], error: failure });
    await expect(channel.reply(said)).rejects.toBe(failure);
    const other = await channel.say('nobody answers');
    await expect(channel.waitForReply(other, { timeoutMs: 20 })).rejects.toThrow(/No reply to message m2 within 20 ms/);
  });

  it('keeps no record with record: false, and still answers', async () => {
    const channel = new MemoryChannel({ record: false, capabilities: { streaming: true } });
    const context = new FakeChannelContext();
    await channel.start(context);
    const said = await channel.say('hi');
    const reply = channel.reply(said);
    await answer(channel, context, [context.received[0]!.message], { stream: ['Hello.'], parts: ['Hello.'] });
    await expect(reply).resolves.toMatchObject({ parts: ['Hello.'] });
    expect([channel.sent, channel.progressEvents, channel.settled]).toEqual([[], [], []]);
  });

  it('records typing, read receipts and reactions', async () => {
    const channel = new MemoryChannel({ capabilities: { typing: true, readReceipts: true, reactions: true } });
    const target = { channel: 'memory', conversationId: 'c', accountId: 'a', inReplyTo: ['m1'], correlationId: 'k', sessionId: 's' };
    await channel.typing(target);
    await channel.markRead(target);
    await channel.react(target, 'm1', '👍');
    expect(channel.typingCalls).toEqual([target]);
    expect(channel.markReadCalls).toEqual([target]);
    expect(channel.reactions).toEqual([{ target, value: { messageId: 'm1', emoji: '👍' } }]);
  });
});
