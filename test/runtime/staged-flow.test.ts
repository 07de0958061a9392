import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { ConfigError } from '../../src/domain/errors.js';
import type { ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const stagedConfig = {
  agent: { flow: 'staged', type: 'booking' },
  staged: {
    types: {
      booking: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } },
    },
  },
};

const booked: number[] = [];
const bookSlot = defineTool({
  name: 'book_slot',
  description: 'Books a slot for the person',
  input: z.object({ slot_id: z.number().int() }),
  run: ({ slot_id }) => {
    booked.push(slot_id);
    return { booked: slot_id, at: '2026-12-01 10:00' };
  },
});

const intentTask = { direct: false, answer: null, intent: 'book a haircut', details: 'slot 7, Monday 10:00' };
const workReport = { status: 'done', summary: 'Booked slot 7', facts: ['slot 7', '2026-12-01 10:00'] };

/** What each stage's calls report using, so that each stage's tokens can be told apart. */
const usageByStage: Record<string, { input: number; output: number }> = {
  intent: { input: 11, output: 1 },
  execution: { input: 20, output: 3 },
  organization: { input: 30, output: 5 },
};

/** A model that answers each stage by the schema it is asked for. */
function stagedModel(overrides: Partial<Record<string, (call: ScriptedCall) => ScriptedReply>> = {}) {
  return (call: ScriptedCall): ScriptedReply => {
    const stage = call.output?.name ?? 'none';
    const override = overrides[stage];
    if (override) return override(call);
    return { ...byStage(call, stage), usage: usageByStage[stage] ?? { input: 10, output: 2 } };
  };
}

function byStage(call: ScriptedCall, stage: string): ScriptedReply {
  if (stage === 'intent') return { text: JSON.stringify(intentTask) };
  if (stage === 'execution') {
    if (call.messages.at(-1)?.type !== 'tool_result') return { toolCalls: [{ name: 'book_slot', arguments: { slot_id: 7 } }] };
    return { text: JSON.stringify(workReport) };
  }
  if (stage === 'organization') return { text: JSON.stringify({ reply: 'Your haircut is booked for Monday, 1 December at 10:00 ("slot 7").' }) };
  return { text: 'a call without a stage schema' };
}

describe('staged flow: intent → execution → organization', () => {
  it('runs each stage on its own model with its schema, stores two audit records and one display reply, and streams only the last', async () => {
    booked.length = 0;
    harness = await createHarness(stagedModel());
    const live = new MemoryChannel({ name: 'live', capabilities: { streaming: true } });
    const palaver = await harness.start(stagedConfig, { tools: [bookSlot], channels: [live] });
    const { outcome, parts } = await live.reply(await live.say('Book me a haircut on Monday at 10', { accountId: 'ann' }));

    const reply = 'Your haircut is booked for Monday, 1 December at 10:00 ("slot 7").';
    expect(outcome.status).toBe('completed');
    expect(parts).toEqual([reply]);
    expect(booked).toEqual([7]);
    expect(harness.model.calls.map((call) => [call.model, call.output?.name])).toEqual([
      ['intent-model', 'intent'],
      ['execution-model', 'execution'],
      ['execution-model', 'execution'],
      ['organization-model', 'organization'],
    ]);
    // Execution knows the task; organization knows what the person asked for and the work report; none of it is
    // shown to the person.
    expect(harness.model.calls[1]!.instructions).toContain('book a haircut');
    const organizationCall = harness.model.calls[3]!.instructions;
    expect(organizationCall).toContain(
      `What the person asked for (for you only):\n${JSON.stringify({ intent: 'book a haircut', details: 'slot 7, Monday 10:00' })}`,
    );
    expect(organizationCall).toContain(`The work report (for you only):\n${JSON.stringify(workReport)}`);

    const streamed = live.progressEvents.flatMap((event) => (event.value.type === 'text_delta' ? [event.value.delta] : [])).join('');
    expect(streamed).toBe(reply);
    expect(live.progressEvents.some((event) => event.value.type === 'discard')).toBe(false);

    const stored = await palaver.store.messages.listRecent(outcome.sessionId, { limit: 20 });
    const stages = stored.filter((message) => message.audience === 'audit' && message.role === 'assistant');
    expect(stages.map((message) => [message.meta?.['stage'], JSON.parse(message.content)])).toEqual([
      ['intent', intentTask],
      ['execution', workReport],
    ]);
    // Each stage's record carries its own tokens and model: intent one call, execution its two (tools, then report).
    expect(stages.map((message) => [message.model, message.inputTokens, message.outputTokens])).toEqual([
      ['intent-model', 11, 1],
      ['execution-model', 40, 6],
    ]);
    expect(stored.filter((message) => message.audience === 'display').map((message) => message.content)).toEqual(['Book me a haircut on Monday at 10', reply]);
    // Every stage's tokens, organization's (30 in, 5 out) included, are billed to the one reply, and counted once.
    const replyRow = stored.find((message) => message.audience === 'display' && message.role === 'assistant')!;
    expect([replyRow.inputTokens, replyRow.outputTokens]).toEqual([81, 12]);
    const session = (await palaver.store.sessions.findById(outcome.sessionId))!;
    expect([session.inputTokens, session.outputTokens]).toEqual([81, 12]);
    const costs = await palaver.store.operators.costs({ by: 'conversation', sessionId: outcome.sessionId, limit: 10 });
    expect(costs.rows.map((row) => [row.inputTokens, row.outputTokens, row.turns])).toEqual([[81, 12, 1]]);

    // The conversation rebuilt for the next turn holds the reply but no stage output.
    await live.reply(await live.say('thanks', { accountId: 'ann' }));
    const nextIntent = harness.model.calls[4]!;
    expect(nextIntent.output?.name).toBe('intent');
    expect(nextIntent.messages.map((item) => (item.type === 'message' ? item.content : ''))).toEqual(['Book me a haircut on Monday at 10', reply, 'thanks']);
  });

  it('answers directly from the intent stage and skips execution and organization', async () => {
    harness = await createHarness(
      stagedModel({ intent: () => ({ text: JSON.stringify({ direct: true, answer: 'Hello! How can I help?', intent: 'greeting', details: '' }) }) }),
    );
    const palaver = await harness.start(stagedConfig, { tools: [bookSlot] });
    const reply = await palaver.chat({ userId: 'bo', text: 'hi' });
    expect(reply.text).toBe('Hello! How can I help?');
    expect(harness.model.calls.map((call) => call.output?.name)).toEqual(['intent']);
    const stored = await palaver.store.messages.listRecent(reply.sessionId, { limit: 10 });
    expect(stored.filter((message) => message.audience === 'audit').map((message) => message.meta?.['stage'])).toEqual(['intent']);
  });

  it('repairs invalid structured output once, telling the model what was wrong', async () => {
    let intentCalls = 0;
    harness = await createHarness(
      stagedModel({
        intent: () =>
          ++intentCalls === 1
            ? { text: '{"direct": "yes"}' }
            : { text: JSON.stringify({ direct: true, answer: 'Fixed answer', intent: 'greeting', details: '' }) },
      }),
    );
    const palaver = await harness.start(stagedConfig);
    const reply = await palaver.chat({ userId: 'cy', text: 'hello' });
    expect(reply.text).toBe('Fixed answer');
    const repair = harness.model.calls[1]!;
    expect(repair.output?.name).toBe('intent');
    expect(repair.messages.at(-2)).toEqual({ type: 'message', role: 'assistant', content: '{"direct": "yes"}' });
    expect(repair.messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('did not match the required "intent" JSON schema') });
    const stored = await palaver.store.messages.listRecent(reply.sessionId, { limit: 10 });
    expect(stored.find((message) => message.meta?.['stage'] === 'intent')?.meta).toMatchObject({ repaired: true });
  });

  it('fails cleanly when a stage stays invalid after its repair: an apology with an error id, the session failed, nothing raw sent', async () => {
    harness = await createHarness(stagedModel({ organization: () => ({ text: 'RAW MODEL TEXT, not JSON' }) }));
    const live = new MemoryChannel({ name: 'live' });
    const palaver = await harness.start(stagedConfig, { tools: [bookSlot], channels: [live] });
    const { outcome, parts } = await live.reply(await live.say('Book me a haircut', { accountId: 'di' }));

    expect(outcome.status).toBe('failed');
    expect(parts.join('\n')).not.toContain('RAW MODEL TEXT');
    const errorId = /Error reference: ([A-Z0-9]{8})/.exec(parts.join('\n'))?.[1];
    expect(errorId).toBeDefined();
    expect(harness.model.calls.filter((call) => call.output?.name === 'organization')).toHaveLength(2);
    expect((await palaver.store.sessions.findById(outcome.sessionId))?.status).toBe('failed');
    const logged = harness.logs.find((line) => line.msg === 'turn failed');
    expect(logged).toMatchObject({ errorId, err: expect.objectContaining({ code: 'invalid_stage_output' }) });
    const stored = await palaver.store.messages.listRecent(outcome.sessionId, { limit: 20 });
    expect(stored.at(-1)?.meta).toMatchObject({ error: true, errorId });
  });

  it('refuses to start without the models of its agent type, naming the type', async () => {
    harness = await createHarness(stagedModel());
    await expect(harness.start({ ...stagedConfig, agent: { flow: 'staged', type: 'support' } })).rejects.toThrow(ConfigError);
    await expect(harness.start({ ...stagedConfig, agent: { flow: 'staged', type: 'support' } })).rejects.toThrow(
      /agent\.type "support" has no models in staged\.types \(known types: booking\)/,
    );
    await expect(harness.start({ agent: { flow: 'staged' } })).rejects.toThrow(/agent\.type is not set/);
  });
});
