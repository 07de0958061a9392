import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { ChannelContext, ReplyTarget } from '../../src/domain/ports/channel.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A memory channel that also hands out its context, for the channel-side calls (reset, state). */
class ContextChannel extends MemoryChannel {
  context!: ChannelContext;
  override async start(context: ChannelContext): Promise<void> {
    this.context = context;
    await super.start(context);
  }
}

describe('reset', () => {
  it('starts the conversation afresh for the model, keeping what was said in the store', async () => {
    harness = await createHarness((call) => ({ text: `saw ${userTexts(call).join(' | ')}` }));
    const chat = new ContextChannel({ name: 'chat' });
    const palaver = await harness.start({}, { channels: [chat] });
    await chat.reply(await chat.say('my name is Ada', { accountId: 'ada' }));
    await chat.context.reset('ada', 'ada');
    const after = await chat.reply(await chat.say('what is my name?', { accountId: 'ada' }));
    expect(after.outcome.reply).toBe('saw what is my name?');
    const stored = await palaver.store.messages.listRecent(after.outcome.sessionId, { limit: 10 });
    expect(stored.map((message) => message.content)).toEqual(['my name is Ada', 'saw my name is Ada', 'what is my name?', 'saw what is my name?']);
    await expect(chat.context.reset('eve', 'ada')).rejects.toMatchObject({ code: 'forbidden' });
  });
});

describe('channel state', () => {
  it("keeps a channel's values across a restart, apart from other channels'", async () => {
    harness = await createHarness(() => ({ text: 'x' }));
    const a = new ContextChannel({ name: 'a' });
    const b = new ContextChannel({ name: 'b' });
    const first = await harness.start({}, { channels: [a, b] });
    await a.context.state.set('offset', '41');
    await a.context.state.set('offset', '42');
    expect(await b.context.state.get('offset')).toBeUndefined();
    await first.close();
    const again = new ContextChannel({ name: 'a' });
    await harness.start({}, { channels: [again] });
    expect(await again.context.state.get('offset')).toBe('42');
    await again.context.state.delete('offset');
    expect(await again.context.state.get('offset')).toBeUndefined();
  });
});

describe('inbox policy', () => {
  it('refuses messages past the waiting cap of a conversation, storing nothing', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    harness = await createHarness(async () => {
      await held;
      return { text: 'done' };
    });
    const chat = new (class extends MemoryChannel {
      readonly inbox = { maxWaiting: 2 };
    })({ name: 'chat' });
    await harness.start({}, { channels: [chat] });
    const first = await chat.say('one', { accountId: 'flo' });
    await expect.poll(() => harness!.model.calls.length).toBe(1);
    await chat.say('two', { accountId: 'flo' });
    await chat.say('three', { accountId: 'flo' });
    await expect(chat.say('four', { accountId: 'flo' })).rejects.toMatchObject({ code: 'busy' });
    release();
    await chat.reply(first);
  });

  it('stores a crowd larger than the accept limit in full, a little at a time, and answers each person once', async () => {
    let storing = 0;
    let mostStoringAtOnce = 0;
    harness = await createHarness((call) => ({ text: `hi ${userTexts(call).join('+')}` }));
    const crowd = new MemoryChannel({ name: 'crowd' });
    const palaver = await harness.start({ limits: { maxConcurrentAccepts: 3 } }, { channels: [crowd] });
    // Counts the first-contact writes running at once (identity resolution is the first store call of an accept).
    const resolveAccount = palaver.store.users.resolveAccount.bind(palaver.store.users);
    palaver.store.users.resolveAccount = async (input) => {
      mostStoringAtOnce = Math.max(mostStoringAtOnce, ++storing);
      try {
        return await resolveAccount(input);
      } finally {
        storing -= 1;
      }
    };
    const said = await Promise.all(Array.from({ length: 30 }, (_, i) => crowd.say(`n${i}`, { accountId: `p${i}` })));
    const replies = await Promise.all(said.map((message) => crowd.reply(message)));
    expect(replies.map((reply) => reply.outcome.reply)).toEqual(Array.from({ length: 30 }, (_, i) => `hi n${i}`));
    expect(crowd.sent).toHaveLength(30);
    expect(mostStoringAtOnce).toBeGreaterThan(1);
    expect(mostStoringAtOnce).toBeLessThanOrEqual(3);
  });

  it("answers a burst within the channel's quiet window with one turn", async () => {
    harness = await createHarness((call) => ({ text: `got ${userTexts(call).join('+')}` }));
    const chat = new (class extends MemoryChannel {
      readonly inbox = { quietWindowMs: 600 };
    })({ name: 'chat' });
    await harness.start({}, { channels: [chat] });
    const said = [await chat.say('a', { accountId: 'gus' }), await chat.say('b', { accountId: 'gus' }), await chat.say('c', { accountId: 'gus' })];
    const replies = await Promise.all(said.map((message) => chat.reply(message)));
    expect(replies[0]!.outcome.reply).toBe('got a+b+c');
    expect(harness.model.calls).toHaveLength(1);
    expect(chat.sent).toHaveLength(1);
  });
});

describe('outbox', () => {
  it("records each part of a reply on a channel that delivers offline as sent, with the channel's message id", async () => {
    const long = Array.from({ length: 12 }, (_, i) => `Sentence ${i} goes here.`).join(' ');
    harness = await createHarness(() => ({ text: long }));
    const phone = new MemoryChannel({ name: 'phone', capabilities: { offlineDelivery: true, maxMessageChars: 100 } });
    const palaver = await harness.start({}, { channels: [phone] });
    const { outcome, parts } = await phone.reply(await phone.say('tell me', { accountId: 'hal' }));
    expect(parts.length).toBeGreaterThan(1);
    const [reply] = await palaver.store.messages.listRecent(outcome.sessionId, { limit: 1 });
    const records = await palaver.store.deliveries.listForReply(reply!.id);
    expect(records.map((record) => [record.text, record.state, record.channelMessageId])).toEqual(
      parts.map((text, index) => [text, 'sent', `${outcome.correlationId}:${index + 1}`]),
    );
  });

  it('marks a part the channel refused, and the parts after it, as not to be sent again', async () => {
    harness = await createHarness(() => ({ text: 'First part here. Second part here. Third part here.' }));
    const refusing = new (class extends MemoryChannel {
      override async send(target: ReplyTarget, text: string) {
        if (this.sent.length >= 1) throw new Error('Forbidden: bot was blocked by the user');
        return super.send(target, text);
      }
    })({ name: 'phone', capabilities: { offlineDelivery: true, maxMessageChars: 20 } });
    const palaver = await harness.start({ inbox: { leaseMs: 100 } }, { channels: [refusing] });
    const { parts } = await refusing.reply(await refusing.say('go', { accountId: 'ivy' }));
    expect(parts).toEqual(['First part here.']);
    const [reply] = await palaver.store.messages.listRecent(refusing.settled[0]!.target.sessionId, { limit: 1 });
    // No part is pending, so nothing is left for a successor to send (recovery claims pending parts only).
    expect((await palaver.store.deliveries.listForReply(reply!.id)).map((record) => record.state)).toEqual(['sent', 'failed', 'failed']);
  });
});
