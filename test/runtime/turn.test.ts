import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { sequenceScript, type ModelScript } from '../../src/testing/index.js';
import type { Palaver } from '../../src/app.js';
import { StoreError } from '../../src/domain/errors.js';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** Calls `tool` once with `args`, then answers with the tool's output. */
function toolThenEcho(tool: string, args: Record<string, unknown>): ModelScript {
  return (call) => {
    const last = call.messages[call.messages.length - 1];
    if (last?.type === 'tool_result') return { text: `Result: ${last.output}` };
    return { toolCalls: [{ name: tool, arguments: args }] };
  };
}

const whoami = defineTool({
  name: 'whoami',
  description: 'Tells which user the tool runs for',
  input: z.object({}),
  run: (_args, ctx) => `acting for ${ctx.userId}`,
});

describe('agent turn', () => {
  it('runs a tool and answers with its result, persisting both messages with usage', async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up an order',
      input: z.object({ id: z.number() }),
      run: ({ id }) => ({ id, status: 'shipped' }),
    });
    harness = await createHarness(toolThenEcho('lookup', { id: 7 }));
    const palaver = await harness.start({ model: { prices: { scripted: { input: '2.50', output: '10' } } } }, { tools: [lookup] });
    const reply = await palaver.chat({ userId: 'alice', text: 'Where is order 7?' });

    expect(reply.status).toBe('completed');
    expect(reply.text).toBe('Result: {"id":7,"status":"shipped"}');
    expect(harness.model.calls).toHaveLength(2);
    expect(harness.model.calls[0]!.toolNames).toEqual(['lookup']);

    const messages = await palaver.store.messages.listRecent(reply.sessionId, { limit: 10 });
    expect(messages.map((message) => [message.role, message.audience])).toEqual([
      ['user', 'display'],
      ['tool', 'audit'],
      ['assistant', 'display'],
    ]);
    const answer = messages[2]!;
    expect(answer.inputTokens).toBeGreaterThan(0);
    expect(answer.outputTokens).toBeGreaterThan(0);
    expect(answer.correlationId).toBe(reply.correlationId);
    // cost = (in * 2.50 + out * 10) / 1e6, exactly
    const expected = (answer.inputTokens * 2.5 + answer.outputTokens * 10) / 1e6;
    expect(Number(answer.cost)).toBeCloseTo(expected, 12);
    const session = await palaver.store.sessions.findById(reply.sessionId);
    expect(session).toMatchObject({ status: 'completed', title: 'Where is order 7?', inputTokens: answer.inputTokens });
    const audit = messages[1]!;
    expect(audit).toMatchObject({
      content: '{"id":7,"status":"shipped"}',
      correlationId: reply.correlationId,
      toolCalls: [{ name: 'lookup', arguments: '{"id":7}' }],
    });
    expect(audit.meta).toMatchObject({ isError: false, refused: false, durationMs: expect.any(Number) });
  });

  it('runs tools for the server-bound user even when the model names another user id', async () => {
    harness = await createHarness(toolThenEcho('whoami', { user_id: 'mallory' }));
    const palaver = await harness.start({}, { tools: [whoami] });
    const reply = await palaver.chat({ userId: 'alice', text: 'who am I?' });
    const alice = await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'alice' });
    expect(reply.text).toBe(`Result: acting for ${alice.user.id}`);
    expect(reply.text).not.toContain('mallory');
  });

  it('composes base and role instructions with the date and time in the user zone', async () => {
    harness = await createHarness(() => ({ text: 'ok' }), { support: 'You are in the support role.' });
    const palaver = await harness.start(
      { agent: { defaultRole: 'support', timezone: 'Asia/Tokyo' }, roles: { definitions: { support: { tools: [] } } } },
      { now: () => new Date('2026-11-22T23:30:00Z') },
    );
    await palaver.chat({ userId: 'bob', text: 'hi' });
    const instructions = harness.model.calls[0]!.instructions;
    expect(instructions).toContain('You are a test agent.');
    expect(instructions).toContain('You are in the support role.');
    // 23:30 UTC is 08:30 the next morning in Tokyo.
    expect(instructions).toContain('Monday, 23 November 2026');
    expect(instructions).toContain('08:30');
    expect(instructions).toContain('Asia/Tokyo');
  });

  it('reads system.md and shared.md as instructions for every role, never as roles of their own', async () => {
    harness = await createHarness(() => ({ text: 'ok' }), {
      system: 'System text first.',
      shared: 'Rules every role shares.',
      support: 'You are in the support role.',
    });
    const palaver = await harness.start({ agent: { defaultRole: 'support' }, roles: { definitions: { support: { tools: [] } } } });
    await palaver.chat({ userId: 'sys', text: 'hi' });
    const instructions = harness.model.calls[0]!.instructions;
    expect(instructions.indexOf('System text first.')).toBeLessThan(instructions.indexOf('You are a test agent.'));
    expect(instructions.indexOf('You are a test agent.')).toBeLessThan(instructions.indexOf('Rules every role shares.'));
    expect(instructions).toContain('You are in the support role.');
  });

  it('sends earlier turns as history and keeps it across a restart', async () => {
    harness = await createHarness((call) => ({ text: `echo: ${lastUserText(call)}` }));
    const first = await harness.start();
    await first.chat({ userId: 'carol', text: 'my name is Carol' });
    await first.close();

    const second = await harness.start();
    const reply = await second.chat({ userId: 'carol', text: 'what is my name?' });
    expect(reply.text).toBe('echo: what is my name?');
    const seen = harness.model.calls[1]!.messages.map((item) => (item.type === 'message' ? `${item.role}: ${item.content}` : item.type));
    expect(seen).toEqual(['user: my name is Carol', 'assistant: echo: my name is Carol', 'user: what is my name?']);
  });

  it('answers with the fallback model when the primary cannot be reached, and records it', async () => {
    harness = await createHarness((call) => ({ text: `from ${call.model}` }));
    const palaver = await harness.start({ model: { baseUrl: 'http://127.0.0.1:9/v1', fallback: { name: 'backup', baseUrl: harness.model.baseUrl } } });
    const reply = await palaver.chat({ userId: 'dan', text: 'hello' });
    expect(reply.text).toBe('from backup');
    const [, answer] = await palaver.store.messages.listRecent(reply.sessionId, { limit: 5 });
    expect(answer).toMatchObject({ model: 'backup', meta: expect.objectContaining({ fallback: true }) });
  });

  it('apologises in the person\u2019s language when no model answers, and logs the error with the correlation id', async () => {
    harness = await createHarness(() => ({ error: { status: 500, message: 'boom' } }));
    const palaver = await harness.start({ agent: { language: 'de' } });
    const reply = await palaver.chat({ userId: 'erin', text: 'Hallo' });
    expect(reply.status).toBe('failed');
    expect(reply.text).toMatch(/^Entschuldigung/);
    const session = await palaver.store.sessions.findById(reply.sessionId);
    expect(session?.status).toBe('failed');
    const messages = await palaver.store.messages.listRecent(reply.sessionId, { limit: 5 });
    expect(messages.map((message) => message.content)).toEqual(['Hallo', reply.text]);
    expect(harness.logs.some((line) => line.msg === 'turn failed' && line.correlationId === reply.correlationId)).toBe(true);
  });

  it('never sends empty model output to the person', async () => {
    harness = await createHarness(() => ({ text: '   ' }));
    const palaver = await harness.start();
    const reply = await palaver.chat({ userId: 'fay', text: 'hi' });
    expect(reply.status).toBe('failed');
    expect(reply.text).toMatch(/^Sorry/);
  });

  it('stops after the maximum tool rounds and makes the model answer without tools', async () => {
    let calls = 0;
    const counter = defineTool({ name: 'counter', description: 'counts', input: z.object({}), run: () => String(++calls) });
    harness = await createHarness((call) =>
      call.toolNames.length > 0 ? { toolCalls: [{ name: 'counter', arguments: {} }] } : { text: 'giving up after tools' },
    );
    const palaver = await harness.start({ agent: { maxToolRounds: 3 } }, { tools: [counter] });
    const reply = await palaver.chat({ userId: 'gus', text: 'loop forever' });
    expect(reply.text).toBe('giving up after tools');
    expect(calls).toBe(3);
    expect(harness.model.calls.at(-1)!.instructions).toContain('used every tool round');
    expect(await palaver.metrics.registry.getSingleMetricAsString('palaver_tool_limit_hits_total')).toContain('limit="tool_rounds"} 1');
  });

  it('refuses tool calls past the per-tool limit and tells the model why', async () => {
    let runs = 0;
    const ping = defineTool({ name: 'ping', description: 'pings', input: z.object({}), run: () => `pong ${++runs}` });
    harness = await createHarness(
      sequenceScript([
        {
          toolCalls: [
            { name: 'ping', arguments: {} },
            { name: 'ping', arguments: {} },
            { name: 'ping', arguments: {} },
          ],
        },
        { text: 'done' },
      ]),
    );
    const palaver = await harness.start({ agent: { maxCallsPerTool: 2 } }, { tools: [ping] });
    await palaver.chat({ userId: 'hal', text: 'ping thrice' });
    expect(runs).toBe(2);
    const results = harness.model.calls[1]!.messages.filter((item) => item.type === 'tool_result');
    expect(results.map((item) => (item.type === 'tool_result' ? item.output : ''))).toEqual(['pong 1', 'pong 2', expect.stringContaining('Limit reached')]);
  });

  it('answers a call id the model repeats within a turn from the first call, without running the tool again', async () => {
    let runs = 0;
    const book = defineTool({
      name: 'book',
      description: 'books a slot',
      input: z.object({ slot: z.number() }),
      run: ({ slot }) => `booked ${slot} (#${++runs})`,
    });
    harness = await createHarness(
      sequenceScript([
        { toolCalls: [{ callId: 'call_same', name: 'book', arguments: { slot: 3 } }] },
        { toolCalls: [{ callId: 'call_same', name: 'book', arguments: { slot: 3 } }] },
        { text: 'booked' },
      ]),
    );
    const palaver = await harness.start({}, { tools: [book] });
    const reply = await palaver.chat({ userId: 'jo', text: 'book slot 3' });
    expect(runs).toBe(1);
    const results = harness.model.calls[2]!.messages.filter((item) => item.type === 'tool_result');
    expect(results.map((item) => (item.type === 'tool_result' ? item.output : ''))).toEqual(['booked 3 (#1)', 'booked 3 (#1)']);
    const audit = (await palaver.store.messages.listRecent(reply.sessionId, { limit: 10, audience: 'audit' })).map((message) => message.content);
    expect(audit).toEqual(['booked 3 (#1)', 'booked 3 (#1)']);
  });

  it('hands invalid tool arguments back to the model as a tool error', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.number() }), run: () => 'never' });
    harness = await createHarness(toolThenEcho('lookup', { id: 'seven' }));
    const palaver = await harness.start({}, { tools: [lookup] });
    const reply = await palaver.chat({ userId: 'ivy', text: 'look up seven' });
    expect(reply.text).toContain('Error: Invalid arguments for lookup');
  });

  it('ignores a redelivered message with the same dedupe key', async () => {
    harness = await createHarness(() => ({ text: 'once' }));
    const room = new MemoryChannel({ name: 'room' });
    await harness.start({}, { channels: [room] });
    const first = await room.say('hi', { accountId: 'jo', conversationId: 'thread-1', dedupeKey: 'run-1' });
    expect((await room.reply(first)).outcome.status).toBe('completed');
    const again = await room.say('hi', { accountId: 'jo', conversationId: 'thread-1', dedupeKey: 'run-1' });
    expect(again.status).toBe('duplicate');
    expect(harness.model.calls).toHaveLength(1);
    expect(room.sent.map((part) => part.value)).toEqual(['once']);
  });

  it('answers messages that arrive during a turn together in the next turn, and stores them in the order the model saw', async () => {
    harness = await createHarness((call) => ({
      text: `saw ${call.messages.filter((item) => item.type === 'message' && item.role === 'user').length}`,
      delayMs: 150,
    }));
    const palaver = await harness.start();
    const first = palaver.chat({ userId: 'kim', text: 'one' });
    await expect.poll(() => harness!.model.calls.length).toBe(1);
    const [second, third] = await Promise.all([palaver.chat({ userId: 'kim', text: 'two' }), palaver.chat({ userId: 'kim', text: 'three' })]);
    expect((await first).text).toBe('saw 1');
    expect(harness.model.calls).toHaveLength(2);
    expect(second).toEqual(third);
    const seen = harness.model.calls[1]!.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content] : []));
    expect(seen.slice(0, 1)).toEqual(['one']);
    expect([...seen.slice(1)].sort()).toEqual(['three', 'two']);
    // The conversation rebuilt from the store is what the model saw, in the same order, each reply after its messages.
    const stored = await palaver.store.messages.listRecent(second.sessionId, { limit: 10, audience: 'display' });
    expect(stored.map((message) => message.content)).toEqual(['one', 'saw 1', ...seen.slice(1), 'saw 3']);
  });

  it('stores a returning person\u2019s message before a tool acts on it', async () => {
    let palaver: Palaver | undefined;
    const seenByTool: string[][] = [];
    const history = defineTool({
      name: 'history',
      description: 'Reads the stored conversation',
      input: z.object({}),
      run: async (_args, ctx) => {
        // Answered messages are in the conversation; the one this turn answers waits in the durable inbox.
        const stored = await palaver!.store.messages.listRecent(ctx.sessionId, { limit: 10, audience: 'display' });
        const queued = await palaver!.store.inbound.listQueued(ctx.sessionId);
        seenByTool.push([...stored.filter((message) => message.role === 'user').map((message) => message.content), ...queued.map((record) => record.text)]);
        return 'read';
      },
    });
    harness = await createHarness(toolThenEcho('history', {}));
    palaver = await harness.start({}, { tools: [history] });
    await palaver.chat({ userId: 'uma', text: 'first' });
    // A slow disk: the second message's write takes a while; the tool must still find it stored.
    const transaction = palaver.store.transaction.bind(palaver.store);
    vi.spyOn(palaver.store, 'transaction').mockImplementationOnce(async (work) => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return transaction(work);
    });
    await palaver.chat({ userId: 'uma', text: 'second' });
    expect(seenByTool).toEqual([['first'], ['first', 'second']]);
  });

  it('fails a turn whose message cannot be stored with the store\u2019s error, before any tool runs', async () => {
    let runs = 0;
    const counted = defineTool({ name: 'counted', description: 'Counts its runs', input: z.object({}), run: () => `run ${++runs}` });
    harness = await createHarness(toolThenEcho('counted', {}));
    const palaver = await harness.start({}, { tools: [counted] });
    const first = await palaver.chat({ userId: 'vic', text: 'one' });
    expect(runs).toBe(1);

    vi.spyOn(palaver.store, 'transaction').mockRejectedValueOnce(new StoreError('unreachable', 'disk full'));
    await expect(palaver.chat({ userId: 'vic', text: 'two' })).rejects.toThrow('disk full');
    expect(runs).toBe(1);
    // Nothing of the failed turn is stored: no message, no apology, and the session is not left running.
    const stored = await palaver.store.messages.listRecent(first.sessionId, { limit: 10 });
    expect(stored.map((message) => message.content)).not.toContain('two');
    expect(stored.filter((message) => message.role === 'assistant')).toHaveLength(1);
    expect(await palaver.store.sessions.findById(first.sessionId)).toMatchObject({ status: 'completed' });

    // The conversation goes on, without the message that was refused.
    const third = await palaver.chat({ userId: 'vic', text: 'three' });
    expect(third.status).toBe('completed');
    expect(runs).toBe(2);
    expect(harness.model.calls.at(-2)!.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content] : []))).toEqual([
      'one',
      'three',
    ]);
  });

  it('rejects empty and oversized messages without storing them', async () => {
    harness = await createHarness(() => ({ text: 'x' }));
    const palaver = await harness.start({ limits: { maxInboundChars: 10 } });
    await expect(palaver.chat({ userId: 'lee', text: '   ' })).rejects.toThrow(/no text/);
    await expect(palaver.chat({ userId: 'lee', text: 'x'.repeat(11) })).rejects.toThrow(/too long/);
    expect(await palaver.store.sessions.listByUser((await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'lee' })).user.id)).toEqual([]);
  });

  it('survives corrupt user state and replaces it with a valid one', async () => {
    harness = await createHarness(() => ({ text: 'still here' }));
    const palaver = await harness.start();
    const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'max' });
    // A state that is valid JSON but not a state object, as a hand edit or an old version might leave.
    await palaver.store.userState.save(user.id, '{not json');
    const reply = await palaver.chat({ userId: 'max', text: 'hi' });
    expect(reply.text).toBe('still here');
    expect(harness.logs.some((line) => line.msg === 'user state unreadable; continuing with an empty state')).toBe(true);
    expect(JSON.parse((await palaver.store.userState.get(user.id))!.raw)).toMatchObject({ role: null, flows: {} });
  });

  it('streams text deltas and tool events to the channel', async () => {
    harness = await createHarness(toolThenEcho('whoami', {}));
    const live = new MemoryChannel({ name: 'live', capabilities: { streaming: true } });
    await harness.start({}, { tools: [whoami], channels: [live] });
    const { outcome, parts } = await live.reply(await live.say('stream please', { accountId: 'ned' }));
    const events = live.progressEvents.map((event) => event.value.type);
    expect(events.slice(0, 2)).toEqual(['tool_call', 'tool_result']);
    expect(events.at(-1)).toBe('text_delta');
    const streamed = live.progressEvents.flatMap((event) => (event.value.type === 'text_delta' ? [event.value.delta] : [])).join('');
    // What streamed is what was sent, once.
    expect(streamed).toBe(outcome.reply);
    expect(parts).toEqual([outcome.reply]);
    expect(outcome.status).toBe('completed');
  });

  it('answers a returning conversation from its cache, without re-reading state and history', async () => {
    harness = await createHarness((call) => ({ text: `seen ${call.messages.length}` }));
    const palaver = await harness.start();
    await palaver.chat({ userId: 'olaf', text: 'one' });
    const listRecent = vi.spyOn(palaver.store.messages, 'listRecent');
    const getState = vi.spyOn(palaver.store.userState, 'get');
    const second = await palaver.chat({ userId: 'olaf', text: 'two' });
    // The model still sees the whole conversation: user, assistant, user.
    expect(second.text).toBe('seen 3');
    expect(listRecent).not.toHaveBeenCalled();
    expect(getState).not.toHaveBeenCalled();
  });

  it('stores every turn of many conversations running at once, each under its own session', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({ id: z.number() }), run: ({ id }) => ({ id }) });
    harness = await createHarness(toolThenEcho('lookup', { id: 1 }));
    const palaver = await harness.start({ model: { prices: { scripted: { input: '1', output: '1' } } } }, { tools: [lookup] });
    const people = Array.from({ length: 24 }, (_, index) => `person-${index}`);
    // Three turns each, all conversations at once: their writes share commits.
    for (let round = 1; round <= 3; round += 1) {
      const replies = await Promise.all(people.map((userId) => palaver.chat({ userId, text: `round ${round}` })));
      expect(replies.every((reply) => reply.status === 'completed')).toBe(true);
    }
    await palaver.close();

    const reopened = await harness.start();
    for (const userId of people) {
      const { user } = await reopened.store.users.resolveAccount({ channel: 'api', accountId: userId });
      const [session] = await reopened.store.sessions.listByUser(user.id);
      expect(session).toMatchObject({ status: 'completed', inputTokens: expect.any(Number) });
      const messages = await reopened.store.messages.listRecent(session!.id, { limit: 20 });
      expect(messages.map((message) => message.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(messages.filter((message) => message.audience === 'display').map((message) => message.content)).toEqual([
        'round 1',
        'Result: {"id":1}',
        'round 2',
        'Result: {"id":1}',
        'round 3',
        'Result: {"id":1}',
      ]);
      expect(Number(session!.cost)).toBeCloseTo(messages.reduce((sum, message) => sum + message.inputTokens + message.outputTokens, 0) / 1e6, 12);
    }
  });
});
