import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { RecordedMessage } from '../../src/domain/ports/channel.js';
import type { ModelScript, ScriptedCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { ContextKeepingChannel as ReadingChannel } from '../support/context-keeping-channel.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** The conversation of Telegram user 42 with the account. */
const chat42 = { accountId: '42', conversationId: '42', displayName: 'Olena' };
const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 9, minute));
const user = (messageId: string, text: string, minute: number, source: RecordedMessage['source'] = 'imported'): RecordedMessage => ({
  role: 'user',
  text,
  messageId,
  at: at(minute),
  source,
});
const owner = (messageId: string, text: string, minute: number): RecordedMessage => ({ role: 'assistant', text, messageId, at: at(minute), source: 'owner' });

/** The conversation a model call carried, as `role: text` lines (tool traffic left out). */
function seen(call: ScriptedCall): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' ? [`${item.role}: ${item.content}`] : []));
}

const echo: ModelScript = (call) => ({ text: `answer to ${lastUserText(call)}` });

async function start(script: ModelScript = echo, config: Record<string, unknown> = {}, tools: Parameters<Harness['start']>[1] = {}) {
  harness = await createHarness(script);
  const channel = new ReadingChannel({ name: 'telegram-user', accountNamespace: 'telegram' });
  const palaver = await harness.start(config, { ...tools, channels: [channel] });
  return { palaver, channel, model: harness.model };
}

describe('recording history without a turn', () => {
  it("stores entries in order, once, without a model call, a cost or a reply; the next turn's model sees them on both sides", async () => {
    const { palaver, channel, model } = await start();
    const history = [user('1', 'hi there', 1), owner('2', 'Hello Olena, this is Taras himself.', 2), user('3', '  when are you open?  ', 3)];
    expect(await channel.recordHistory(chat42, history)).toEqual({ stored: 3 });
    // Imported again with one more message: only that one is new.
    expect(await channel.recordHistory(chat42, [...history, user('4', 'and on Sunday?', 4, 'held')])).toEqual({ stored: 1 });
    expect(await channel.recordHistory(chat42, history)).toEqual({ stored: 0 });

    expect(model.calls).toHaveLength(0);
    expect(channel.sent).toEqual([]);
    const transcript = await channel.context!.transcript('42', '42');
    expect(transcript.map((entry) => [entry.role, entry.text, entry.at.toISOString()])).toEqual([
      ['user', 'hi there', at(1).toISOString()],
      ['assistant', 'Hello Olena, this is Taras himself.', at(2).toISOString()],
      ['user', 'when are you open?', at(3).toISOString()],
      ['user', 'and on Sunday?', at(4).toISOString()],
    ]);
    const session = (await palaver.store.sessions.findByConversation('telegram-user', '42'))!;
    expect(session).toMatchObject({ cost: '0', inputTokens: 0, outputTokens: 0, title: 'hi there' });
    const stored = await palaver.store.messages.listRecent(session.id, { limit: 10 });
    expect(stored.map((message) => message.meta)).toEqual([
      { recorded: 'imported', messageId: '1', at: at(1).toISOString() },
      { recorded: 'owner', messageId: '2', at: at(2).toISOString() },
      { recorded: 'imported', messageId: '3', at: at(3).toISOString() },
      { recorded: 'held', messageId: '4', at: at(4).toISOString() },
    ]);
    expect(stored.every((message) => message.cost === '0' && message.model === null)).toBe(true);
    expect(await palaver.store.inbound.listQueued(session.id)).toEqual([]);

    // The person writes: the model gets the recorded conversation as it happened, the owner's words as its own side.
    const reply = await channel.waitForReply(await channel.say('Sunday 10 am?', chat42), { timeoutMs: 20_000 });
    expect(reply.parts).toEqual(['answer to Sunday 10 am?']);
    expect(model.calls).toHaveLength(1);
    expect(seen(model.calls[0]!)).toEqual([
      'user: hi there',
      'assistant: Hello Olena, this is Taras himself.',
      'user: when are you open?',
      'user: and on Sunday?',
      'user: Sunday 10 am?',
    ]);
  });

  it('skips an entry whose message came in through accept, and stores the rest', async () => {
    const { palaver, channel, model } = await start();
    await channel.waitForReply(await channel.say('I wrote this live', { ...chat42, messageId: '55' }), { timeoutMs: 20_000 });
    expect(await channel.recordHistory(chat42, [user('55', 'I wrote this live', 5), owner('56', 'Taras here, noted.', 6)])).toEqual({ stored: 1 });
    const session = (await palaver.store.sessions.findByConversation('telegram-user', '42'))!;
    expect((await palaver.store.messages.listRecent(session.id, { limit: 10, audience: 'display' })).map((message) => message.content)).toEqual([
      'I wrote this live',
      'answer to I wrote this live',
      'Taras here, noted.',
    ]);
    expect(model.calls).toHaveLength(1);
  });

  it('refuses to record into a direct conversation of someone else, and stores nothing', async () => {
    const { palaver, channel } = await start();
    await channel.waitForReply(await channel.say('my own chat', chat42), { timeoutMs: 20_000 });
    const session = (await palaver.store.sessions.findByConversation('telegram-user', '42'))!;
    const before = await palaver.store.messages.listRecent(session.id, { limit: 10 });
    await expect(channel.recordHistory({ accountId: '77', conversationId: '42' }, [user('9', 'I am not Olena', 9)])).rejects.toMatchObject({
      name: 'ChannelError',
      code: 'forbidden',
    });
    expect(await palaver.store.messages.listRecent(session.id, { limit: 10 })).toEqual(before);
    // The stranger was not even created.
    expect(await palaver.store.users.findByAccount('telegram', '77')).toBeUndefined();
  });

  it('refuses a batch with an entry accept would refuse, storing none of it', async () => {
    const { palaver, channel } = await start(echo, { limits: { maxInboundChars: 20 } });
    await expect(channel.recordHistory(chat42, [user('1', 'fine', 1), user('2', 'x'.repeat(21), 2)])).rejects.toMatchObject({ code: 'inbound_invalid' });
    await expect(channel.recordHistory(chat42, [user('1', 'fine', 1), user('2', 'nul \u0000 inside', 2)])).rejects.toMatchObject({ code: 'inbound_invalid' });
    await expect(channel.recordHistory(chat42, [user('1', '   ', 1)])).rejects.toMatchObject({ code: 'inbound_invalid' });
    expect(await palaver.store.sessions.findByConversation('telegram-user', '42')).toBeUndefined();
  });

  it('after a restart nothing recorded is answered; the next message is answered once, with the history', async () => {
    const { palaver, channel, model } = await start();
    expect(await channel.recordHistory(chat42, [user('1', 'are you there?', 1), user('2', 'hello?', 2, 'held')])).toEqual({ stored: 2 });
    const session = (await palaver.store.sessions.findByConversation('telegram-user', '42'))!;
    await palaver.close();
    // A new process on the same database: its recovery finds nothing of these to answer.
    const again = new ReadingChannel({ name: 'telegram-user', accountNamespace: 'telegram' });
    const restarted = await harness!.start({}, { channels: [again] });
    expect(await restarted.store.inbound.listQueued(session.id)).toEqual([]);
    const reply = await again.waitForReply(await again.say('anyone?', chat42), { timeoutMs: 20_000 });
    expect(reply.parts).toEqual(['answer to anyone?']);
    expect(model.calls).toHaveLength(1);
    expect(seen(model.calls[0]!)).toEqual(['user: are you there?', 'user: hello?', 'user: anyone?']);
    expect(again.sent.map((part) => part.value)).toEqual(['answer to anyone?']);
  });

  it('labels recorded user messages of a group with their sender, as the turn labels the others', async () => {
    const { channel, model } = await start();
    const group = { accountId: '42', conversationId: 'group-1', displayName: 'Olena', conversationKind: 'shared' as const };
    expect(await channel.recordHistory(group, [user('1', 'who is coming?', 1)])).toEqual({ stored: 1 });
    await channel.waitForReply(await channel.say('me!', { accountId: '43', conversationId: 'group-1', displayName: 'Ivan', conversationKind: 'shared' }), {
      timeoutMs: 20_000,
    });
    const [earlier, latest] = seen(model.calls[0]!);
    expect(earlier).toMatch(/^user: \[from "Olena" #[0-9a-f]{6}\] who is coming\?$/);
    expect(latest).toMatch(/^user: \[from "Ivan" #[0-9a-f]{6}\] me!$/);
  });
});

const lookup = defineTool({ name: 'lookup', description: 'Looks something up', input: z.object({ q: z.string() }), run: ({ q }) => `found ${q}` });

/** Uses the tool once per turn, so the turn's response is kept and chained; answers with what the last call saw. */
const chainScript: ModelScript = (call) => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `answer after ${last.output}` };
  return { toolCalls: [{ name: 'lookup', arguments: { q: lastUserText(call) ?? '' } }] };
};
const responses = { model: { provider: 'openai-responses' } };

describe('recording history with a Responses chain', () => {
  it('sends the next turn unchained with the recorded messages, then chains again', async () => {
    const { channel, model } = await start(chainScript, responses, { tools: [lookup] });
    await channel.waitForReply(await channel.say('first question', chat42), { timeoutMs: 20_000 });
    expect(model.calls[1]!.previousResponseId).toMatch(/^resp_/);

    expect(await channel.recordHistory(chat42, [owner('10', 'Taras here: we open at 9.', 10), user('11', 'thanks!', 11, 'held')])).toEqual({ stored: 2 });
    await channel.waitForReply(await channel.say('second question', chat42), { timeoutMs: 20_000 });
    const afterRecording = model.calls[2]!;
    expect(afterRecording.previousResponseId).toBeUndefined();
    expect(seen(afterRecording)).toEqual([
      'user: first question',
      'assistant: answer after found first question',
      'assistant: Taras here: we open at 9.',
      'user: thanks!',
      'user: second question',
    ]);

    // Nothing recorded since: the chain goes on, with only the new message.
    await channel.waitForReply(await channel.say('third question', chat42), { timeoutMs: 20_000 });
    const chained = model.calls[4]!;
    expect(chained.previousResponseId).toMatch(/^resp_/);
    expect(seen(chained)).toEqual(['user: third question']);
  });

  it("does not continue one conversation's chain in another conversation of the same person", async () => {
    harness = await createHarness(chainScript);
    const bot = new MemoryChannel({ name: 'telegram-bot', accountNamespace: 'telegram' });
    const account = new MemoryChannel({ name: 'telegram-user', accountNamespace: 'telegram' });
    await harness.start(responses, { tools: [lookup], channels: [bot, account] });
    await bot.waitForReply(await bot.say('about my order', chat42), { timeoutMs: 20_000 });
    await account.waitForReply(await account.say('about my visit', chat42), { timeoutMs: 20_000 });
    const inOtherConversation = harness.model.calls[2]!;
    expect(inOtherConversation.previousResponseId).toBeUndefined();
    expect(seen(inOtherConversation)).toEqual(['user: about my visit']);
  });

  it('does not chain past messages recorded while a turn ran', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = true;
    const script: ModelScript = async (call) => {
      if (held && lastUserText(call) === 'slow question' && call.messages.at(-1)?.type !== 'tool_result') {
        held = false;
        await gate;
      }
      return chainScript(call);
    };
    const { channel, model } = await start(script, responses, { tools: [lookup] });
    await channel.waitForReply(await channel.say('first question', chat42), { timeoutMs: 20_000 });
    const slow = await channel.say('slow question', chat42);
    await expect.poll(() => model.calls.length, { timeout: 20_000 }).toBe(3);
    // The owner writes while the model is still thinking.
    expect(await channel.recordHistory(chat42, [owner('20', 'Taras: give me a minute', 20)])).toEqual({ stored: 1 });
    release();
    await channel.waitForReply(slow, { timeoutMs: 20_000 });

    await channel.waitForReply(await channel.say('next question', chat42), { timeoutMs: 20_000 });
    const next = model.calls.find((call) => lastUserText(call) === 'next question')!;
    expect(next.previousResponseId).toBeUndefined();
    expect(seen(next)).toContain('assistant: Taras: give me a minute');
    expect(seen(next).at(-1)).toBe('user: next question');
  });
});
