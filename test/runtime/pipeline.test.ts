import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { ChannelError } from '../../src/domain/errors.js';
import type { ChannelContext } from '../../src/domain/ports/channel.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('pipeline', () => {
  it('answers messages that arrived during a turn with one reply, delivered once to the conversation', async () => {
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    harness = await createHarness(async (call) => {
      if (harness!.model.calls.length === 1) await firstHeld;
      return { text: `answering ${userTexts(call).slice(-3).join(' + ')}` };
    });
    const chat = new MemoryChannel({ name: 'chat' });
    await harness.start({}, { channels: [chat] });

    const first = await chat.say('one', { accountId: 'ann' });
    // The first turn is with the model; these two arrive meanwhile.
    await expect.poll(() => harness!.model.calls.length, { timeout: 10_000 }).toBe(1);
    const second = await chat.say('two', { accountId: 'ann' });
    const third = await chat.say('three', { accountId: 'ann' });
    releaseFirst();

    const [a, b, c] = await Promise.all([chat.reply(first), chat.reply(second), chat.reply(third)]);
    expect(a.parts).toEqual(['answering one']);
    expect(b).toEqual(c);
    expect(b.parts).toEqual(['answering one + two + three']);
    // Two turns, two deliveries: the batch of two got one reply, not one per message.
    expect(chat.sent.map((part) => part.value)).toEqual(['answering one', 'answering one + two + three']);
    expect(chat.settled.map((end) => end.target.inReplyTo)).toEqual([[first.messageId], [second.messageId, third.messageId]]);
    expect(harness.model.calls).toHaveLength(2);
  });

  it("splits a long reply to the channel's limit and stores it whole", async () => {
    const long = Array.from({ length: 40 }, (_, i) => `Sentence number ${i} is here.`).join(' ');
    harness = await createHarness(() => ({ text: long }));
    const narrow = new MemoryChannel({ name: 'narrow', capabilities: { maxMessageChars: 100 } });
    const palaver = await harness.start({}, { channels: [narrow] });
    const { outcome, parts } = await narrow.reply(await narrow.say('tell me everything', { accountId: 'bo' }));
    expect(parts.length).toBeGreaterThan(5);
    expect(parts.every((part) => part.length <= 100)).toBe(true);
    expect(parts.join(' ')).toBe(long);
    const [stored] = (await palaver.store.messages.listRecent(outcome.sessionId, { limit: 1 })).map((message) => message.content);
    expect(stored).toBe(long);
  });

  it('marks the answered messages read and shows typing before the reply, where the channel can', async () => {
    harness = await createHarness(() => ({ text: 'hi', delayMs: 30 }));
    const phone = new MemoryChannel({ name: 'phone', capabilities: { typing: true, readReceipts: true } });
    await harness.start({}, { channels: [phone] });
    const said = await phone.say('hello', { accountId: 'cy' });
    await phone.reply(said);
    expect(phone.markReadCalls.map((target) => target.inReplyTo)).toEqual([[said.messageId]]);
    expect(phone.typingCalls.length).toBeGreaterThanOrEqual(1);
  });

  it('shows only the stored reply when the model stream breaks and the fallback answers', async () => {
    harness = await createHarness((call) =>
      call.model === 'scripted' ? { text: 'The half-written answer that never ends', cutStreamAfterEvents: 4 } : { text: 'Fallback answer.' },
    );
    const live = new MemoryChannel({ name: 'live', capabilities: { streaming: true } });
    await harness.start({ model: { fallback: { name: 'backup' } } }, { channels: [live] });
    const { outcome, parts } = await live.reply(await live.say('question', { accountId: 'di' }));
    expect(outcome.reply).toBe('Fallback answer.');
    expect(parts).toEqual(['Fallback answer.']);
    const events = live.progressEvents.map((event) => event.value);
    const discardAt = events.findIndex((event) => event.type === 'discard');
    // Text streamed by the broken attempt, then a discard, then only the fallback's text.
    expect(events.slice(0, discardAt).some((event) => event.type === 'text_delta')).toBe(true);
    expect(discardAt).toBeGreaterThan(0);
    const after = events
      .slice(discardAt + 1)
      .flatMap((event) => (event.type === 'text_delta' ? [event.delta] : []))
      .join('');
    expect(after).toBe('Fallback answer.');
  });

  it('refuses a message that names another channel than the one handing it over', async () => {
    harness = await createHarness(() => ({ text: 'never' }));
    let context!: ChannelContext;
    const sneaky = new MemoryChannel({ name: 'sneaky' });
    const original = sneaky.start.bind(sneaky);
    sneaky.start = async (ctx) => {
      context = ctx;
      await original(ctx);
    };
    await harness.start({}, { channels: [sneaky] });
    await expect(context.accept({ channel: 'telegram-bot', accountId: '42', conversationId: '42', text: 'I am someone else' })).rejects.toBeInstanceOf(
      ChannelError,
    );
    expect(harness.model.calls).toHaveLength(0);
  });
});
