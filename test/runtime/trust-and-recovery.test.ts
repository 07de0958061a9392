import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('who may write into a conversation', () => {
  it('refuses a message into a direct conversation of another user, storing nothing and asking no model', async () => {
    harness = await createHarness((call) => ({ text: `answered ${userTexts(call).join(', ')}` }));
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start({}, { channels: [chat] });
    const mine = await chat.reply(await chat.say('my secret plan', { accountId: 'alice', conversationId: 'thread-a' }));

    await expect(chat.say('show me the plan', { accountId: 'mallory', conversationId: 'thread-a' })).rejects.toMatchObject({
      name: 'ChannelError',
      code: 'forbidden',
    });
    expect(harness.model.calls).toHaveLength(1);
    expect(await palaver.store.inbound.listQueued(mine.outcome.sessionId)).toEqual([]);
    const stored = await palaver.store.messages.listRecent(mine.outcome.sessionId, { limit: 10 });
    expect(stored.map((message) => message.content)).toEqual(['my secret plan', 'answered my secret plan']);
    // Mallory's own conversation is untouched by Alice's: a new thread is hers.
    expect((await chat.reply(await chat.say('hello', { accountId: 'mallory', conversationId: 'thread-m' }))).outcome.reply).toBe('answered hello');
  });

  it("in a shared conversation never mixes senders in a batch, and runs each turn's tools for its sender", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const whoami = defineTool({
      name: 'whoami',
      description: 'Who the tool acts for',
      input: z.object({}),
      run: (_args, ctx) => ctx.accounts.map((account) => account.accountId).join(','),
    });
    harness = await createHarness(async (call) => {
      const last = call.messages.at(-1);
      if (last?.type === 'tool_result') return { text: `for ${last.output}` };
      if (harness!.model.calls.length === 1) await held;
      return { toolCalls: [{ name: 'whoami', arguments: {} }] };
    });
    const group = new MemoryChannel({ name: 'group' });
    await harness.start({}, { tools: [whoami], channels: [group] });
    const first = await sayShared(group, 'ann', 'one');
    await expect.poll(() => harness!.model.calls.length).toBe(1);
    const fromBen = await sayShared(group, 'ben', 'two');
    const fromAnn = await sayShared(group, 'ann', 'three');
    release();
    const replies = await Promise.all([group.reply(first), group.reply(fromBen), group.reply(fromAnn)]);
    expect(replies.map((reply) => reply.outcome.reply)).toEqual(['for ann', 'for ben', 'for ann']);
    // Three turns: Ben's and Ann's later messages were not answered together.
    expect(group.settled).toHaveLength(3);
  });
});

/** Sends a message into a shared conversation through the channel's context, as a group channel would. */
async function sayShared(channel: MemoryChannel, accountId: string, text: string) {
  return channel.say(text, { accountId, conversationId: 'family-chat', conversationKind: 'shared' });
}

describe('input every back end accepts', () => {
  it('refuses NUL characters and broken surrogates in text and ids with a clear error, storing nothing', async () => {
    harness = await createHarness(() => ({ text: 'never' }));
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start({}, { channels: [chat] });
    await expect(chat.say('hi\u0000there', { accountId: 'nul' })).rejects.toMatchObject({ code: 'inbound_invalid', message: expect.stringContaining('NUL') });
    await expect(chat.say('broken \uD800 pair', { accountId: 'sur' })).rejects.toMatchObject({ code: 'inbound_invalid' });
    await expect(chat.say('fine', { accountId: 'x\u0000y' })).rejects.toMatchObject({ code: 'inbound_invalid' });
    expect(harness.model.calls).toHaveLength(0);
    expect(await palaver.store.users.findByAccount('chat', 'nul')).toBeUndefined();
    // A well-formed pair (an emoji) is fine.
    expect((await chat.reply(await chat.say('ok 😀', { accountId: 'emoji' }))).outcome.status).toBe('completed');
  });
});

describe('retries and failures', () => {
  it('answers a retried message whose turn completed with the stored reply, not a new turn', async () => {
    harness = await createHarness(() => ({ text: 'the answer' }));
    const chat = new MemoryChannel({ name: 'chat' });
    await harness.start({}, { channels: [chat] });
    const first = await chat.say('question', { accountId: 'rita', dedupeKey: 'run-1' });
    const { outcome } = await chat.reply(first);
    const again = await chat.say('question', { accountId: 'rita', dedupeKey: 'run-1' });
    // The same reply, down to its id: what a client saw streamed is what it gets again.
    expect(again).toMatchObject({ status: 'duplicate', answered: { text: 'the answer', status: 'completed', replyMessageId: outcome.replyMessageId } });
    expect(harness.model.calls).toHaveLength(1);
    // The same key in another conversation is a message of its own.
    const elsewhere = await chat.say('question', { accountId: 'rita', conversationId: 'other', dedupeKey: 'run-1' });
    expect(elsewhere.status).toBe('accepted');
  });

  it('keeps the record of a failed turn: the tool that ran, and the tokens of the model call that answered', async () => {
    let ran = 0;
    const book = defineTool({ name: 'book', description: 'Books', input: z.object({}), run: () => `booked #${++ran}` });
    harness = await createHarness((call) =>
      call.messages.at(-1)?.type === 'tool_result'
        ? { error: { status: 400, message: 'bad request' } }
        : { toolCalls: [{ name: 'book', arguments: {} }], usage: { input: 40, output: 4 } },
    );
    const palaver = await harness.start({ model: { prices: { scripted: { input: '1', output: '1' } } } }, { tools: [book] });
    const reply = await palaver.chat({ userId: 'tom', text: 'book it' });
    expect(reply.status).toBe('failed');
    expect(ran).toBe(1);
    const audit = await palaver.store.messages.listRecent(reply.sessionId, { limit: 10, audience: 'audit' });
    expect(audit.map((message) => message.content)).toEqual(['booked #1']);
    const session = await palaver.store.sessions.findById(reply.sessionId);
    expect(session).toMatchObject({ status: 'failed', inputTokens: 40, outputTokens: 4, cost: '0.000044' });
  });
});
