import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { sequenceScript, type ScriptedReply } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const actions = { agent: { replies: 'actions' } };
const plan = (...items: unknown[]): ScriptedReply => ({ text: JSON.stringify({ actions: items }), usage: { input: 10, output: 5 } });
const hello = plan({ type: 'send_messages', messages: ['Hi!', 'How can I help?'] });

/** The user messages of a model call, as the model read them. */
function userMessages(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content ?? ''] : []));
}

async function invalidCount(
  palaver: { metrics: { replyActionsInvalid: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> } } },
  reason: string,
): Promise<number> {
  const { values } = await palaver.metrics.replyActionsInvalid.get();
  return values.find((value) => value.labels['reason'] === reason)?.value ?? 0;
}

describe('replies as actions: the model is asked for a plan', () => {
  it('asks Chat Completions for the plan as strict json_schema, with the prompt and the message ids, and sends its messages', async () => {
    harness = await createHarness(sequenceScript([hello]));
    const palaver = await harness.start({ agent: { replies: 'actions', actions: { maxActions: 6 } } });
    const reply = await palaver.chat({ userId: 'ann', text: 'hello' });

    expect(reply.status).toBe('completed');
    expect(reply.parts).toEqual(['Hi!', 'How can I help?']);
    const [call] = harness.model.calls;
    expect(call!.body['response_format']).toMatchObject({ type: 'json_schema', json_schema: { name: 'reply_actions', strict: true } });
    expect(call!.instructions).toContain('## How you answer');
    expect(call!.instructions).toContain('At most 6 actions');
    expect(userMessages(call!)).toEqual([expect.stringMatching(/^\[message_id: m\d+\] hello$/)]);
  });

  it('asks the Responses API for the plan as a strict text.format', async () => {
    harness = await createHarness(sequenceScript([hello]));
    const palaver = await harness.start({ ...actions, model: { provider: 'openai-responses' } });
    const reply = await palaver.chat({ userId: 'ben', text: 'hello' });
    expect(reply.parts).toEqual(['Hi!', 'How can I help?']);
    expect(harness.model.calls[0]!.body['text']).toMatchObject({ format: { type: 'json_schema', name: 'reply_actions', strict: true } });
  });

  it('asks for no structured output and shows no ids in text mode', async () => {
    harness = await createHarness(() => ({ text: 'plain' }));
    const palaver = await harness.start();
    await palaver.chat({ userId: 'cat', text: 'hello' });
    const [call] = harness.model.calls;
    expect(call!.body['response_format']).toBeUndefined();
    expect(call!.instructions).not.toContain('## How you answer');
    expect(userMessages(call!)).toEqual(['hello']);
  });

  it('runs tool rounds before the plan, each call asking for the plan format', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up an order', input: z.object({}), run: () => 'shipped' });
    harness = await createHarness(
      sequenceScript([{ toolCalls: [{ name: 'lookup', arguments: {} }] }, plan({ type: 'send_message', text: 'It shipped.', reply_to: null })]),
    );
    const palaver = await harness.start(actions, { tools: [lookup] });
    const reply = await palaver.chat({ userId: 'dee', text: 'where is my order?' });
    expect(reply.parts).toEqual(['It shipped.']);
    expect(harness.model.calls).toHaveLength(2);
    expect(harness.model.calls[1]!.messages.some((item) => item.type === 'tool_result')).toBe(true);
  });

  it('shows the earlier messages\u2019 ids in the history, and lets a plan react to one of them', async () => {
    harness = await createHarness(sequenceScript([hello]));
    const palaver = await harness.start(actions);
    await palaver.chat({ userId: 'eve', text: 'first' });
    const firstId = /^\[message_id: (m\d+)\]/.exec(userMessages(harness.model.calls[0]!)[0]!)![1]!;
    harness.model.setScript(() =>
      plan({ type: 'add_reaction', emoji: '👍', message_id: firstId }, { type: 'send_message', text: 'Noted.', reply_to: firstId }),
    );
    const reply = await palaver.chat({ userId: 'eve', text: 'second' });

    const seen = userMessages(harness.model.calls[1]!);
    expect(seen).toEqual([`[message_id: ${firstId}] first`, expect.stringMatching(/^\[message_id: m\d+\] second$/)]);
    expect(reply.status).toBe('completed');
    expect(reply.parts).toEqual(['Noted.']);
    expect(await invalidCount(palaver, 'unknown_message_id')).toBe(0);
  });
});

describe('replies as actions: per channel', () => {
  it('answers in actions on a channel whose config says so, and in text on one without a config entry', async () => {
    harness = await createHarness((call) => (call.output ? hello : { text: 'plain text' }));
    // A stand-in for the web channel under its name: its config entry (off, so the real one does not start) overrides the agent's mode.
    const web = new MemoryChannel({ name: 'web' });
    const other = new MemoryChannel({ name: 'other' });
    await harness.start({ channels: { web: { enabled: false, replies: 'actions' } } }, { channels: [web, other] });

    expect((await web.reply(await web.say('hello', { accountId: 'kim' }))).parts).toEqual(['Hi!', 'How can I help?']);
    expect((await other.reply(await other.say('hello', { accountId: 'kim' }))).parts).toEqual(['plain text']);
  });
});

describe('replies as actions: the staged flow', () => {
  const staged = {
    agent: { replies: 'actions', flow: 'staged', type: 'desk' },
    staged: { types: { desk: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } } },
  };
  const task = { direct: false, answer: null, intent: 'check the order', details: 'order 7' };
  const report = { status: 'done', summary: 'Order 7 shipped', facts: ['order 7'] };

  it('asks its last stage for the plan (the earlier stages keep their own schemas)', async () => {
    harness = await createHarness((call) => {
      if (call.output?.name === 'intent') return { text: JSON.stringify(task) };
      if (call.output?.name === 'execution') return { text: JSON.stringify(report) };
      return plan({ type: 'send_message', text: 'Order 7 is on its way.', reply_to: null });
    });
    const palaver = await harness.start(staged);
    const reply = await palaver.chat({ userId: 'ida', text: 'where is order 7?' });
    expect(reply.parts).toEqual(['Order 7 is on its way.']);
    expect(harness.model.calls.map((call) => [call.model, call.output?.name])).toEqual([
      ['intent-model', 'intent'],
      ['execution-model', 'execution'],
      ['organization-model', 'reply_actions'],
    ]);
    expect(harness.model.calls[0]!.instructions).not.toContain('## How you answer');
    expect(harness.model.calls[2]!.instructions).toContain('## How you answer');
  });

  it('sends a direct answer of the intent stage as a plan of one message', async () => {
    harness = await createHarness(() => ({ text: JSON.stringify({ direct: true, answer: 'Hello there!', intent: 'greet', details: '' }) }));
    const palaver = await harness.start(staged);
    const reply = await palaver.chat({ userId: 'jon', text: 'hi' });
    expect(reply.parts).toEqual(['Hello there!']);
    expect(harness.model.calls).toHaveLength(1);
  });
});

describe('replies as actions: an invalid plan is never sent', () => {
  it('asks for one repair without tools, showing the problem, and sends the repaired plan; both calls are billed', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({}), run: () => 'x' });
    harness = await createHarness(sequenceScript([{ text: 'Sure, here is my answer!', usage: { input: 10, output: 5 } }, hello]));
    const palaver = await harness.start(actions, { tools: [lookup] });
    const reply = await palaver.chat({ userId: 'fay', text: 'hello' });

    expect(reply.parts).toEqual(['Hi!', 'How can I help?']);
    expect(harness.model.calls).toHaveLength(2);
    const repair = harness.model.calls[1]!;
    expect(repair.toolNames).toEqual([]);
    expect(repair.output?.name).toBe('reply_actions');
    expect(repair.messages.at(-2)).toEqual({ type: 'message', role: 'assistant', content: 'Sure, here is my answer!' });
    expect(userMessages(repair).at(-1)).toContain('not valid JSON');
    expect(await invalidCount(palaver, 'invalid_json')).toBe(1);

    const messages = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    const refused = messages.filter((message) => message.audience === 'audit' && message.meta?.['invalidReplyActions'] !== undefined);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      content: 'Sure, here is my answer!',
      correlationId: reply.correlationId,
      meta: { invalidReplyActions: { reason: 'invalid_json' } },
    });
    // Nothing refused reaches the person's view of the conversation.
    expect(messages.filter((message) => message.audience === 'display').map((message) => message.content)).toEqual(['hello', 'Hi!', 'How can I help?']);
    const session = await palaver.store.sessions.findById(reply.sessionId);
    expect(session).toMatchObject({ inputTokens: 20, outputTokens: 10 });
    expect(
      harness.logs.some(
        (line) =>
          line.msg === 'model answer refused as reply actions; nothing of it is sent' &&
          line.correlationId === reply.correlationId &&
          line.reason === 'invalid_json',
      ),
    ).toBe(true);
  });

  it.each([
    ['an unknown action', plan({ type: 'send_sticker', sticker: 'cat' }), 'unknown_action'],
    ['a negative wait', plan({ type: 'wait', seconds: -3 }, { type: 'send_message', text: 'hi', reply_to: null }), 'invalid_wait'],
    ['11 actions', plan(...Array.from({ length: 11 }, () => ({ type: 'send_message', text: 'hi', reply_to: null }))), 'too_many_actions'],
    ['a reaction to an invented id', plan({ type: 'add_reaction', emoji: '👍', message_id: 424242 }), 'unknown_message_id'],
    ['waits over the total', plan({ type: 'wait', seconds: 30 }, { type: 'wait', seconds: 30 }, { type: 'wait', seconds: 30 }), 'too_long_waits'],
  ])('sends nothing for %s after the repair fails too (silence), and logs, counts and audits both', async (_name, bad, reason) => {
    harness = await createHarness(() => bad);
    const palaver = await harness.start(actions);
    const reply = await palaver.chat({ userId: 'gil', text: 'hello' });

    expect(reply.status).toBe('completed');
    expect(reply.parts).toEqual([]);
    expect(harness.model.calls).toHaveLength(2);
    expect(await invalidCount(palaver, reason)).toBe(2);
    const messages = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    expect(messages.filter((message) => message.meta?.['invalidReplyActions'] !== undefined)).toHaveLength(2);
    expect(messages.filter((message) => message.audience === 'display' && message.role === 'assistant')).toEqual([]);
  });

  it('answers with the apology after a failed repair when onInvalidActions is apologise', async () => {
    harness = await createHarness(() => ({ text: 'not json' }));
    const palaver = await harness.start({ agent: { replies: 'actions', actions: { onInvalidActions: 'apologise' } } });
    const reply = await palaver.chat({ userId: 'hal', text: 'hello' });

    expect(reply.status).toBe('failed');
    expect(reply.text).toMatch(/^Sorry/);
    expect(reply.text).not.toContain('not json');
    const messages = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    expect(messages.filter((message) => message.meta?.['invalidReplyActions'] !== undefined).map((message) => message.content)).toEqual([
      'not json',
      'not json',
    ]);
    expect(await invalidCount(palaver, 'invalid_json')).toBe(2);
  });
});
