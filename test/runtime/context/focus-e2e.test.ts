import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startLogisticsMcpServer } from '../../../examples/logistics/mcp-server.js';
import type { Palaver } from '../../../src/app.js';
import { MemoryChannel } from '../../../src/channels/memory/memory-channel.js';
import { defineTool } from '../../../src/tools/define-tool.js';
import type { ScriptedCall, ScriptedReply } from '../../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../../support/palaver-harness.js';

let harness: Harness | undefined;
let mcp: Awaited<ReturnType<typeof startLogisticsMcpServer>> | undefined;
afterEach(async () => {
  await harness?.close();
  await mcp?.close();
  harness = undefined;
  mcp = undefined;
});

/**
 * A tiny salon: appointments per account of the bound user; every tool acts for that user only. While
 * `calendar.offline`, listing the appointments throws, as a booking system that is down would.
 */
function salon(initial: Record<string, { id: number; what: string }[]>) {
  const book = new Map(Object.entries(initial));
  const loads: string[] = [];
  const cancelled: number[] = [];
  const calendar = { offline: false };
  const mine = (account: string) => book.get(account) ?? [];
  const accountOf = (ctx: { accounts: readonly { accountId: string }[] }) => ctx.accounts[0]!.accountId;
  const tools = [
    defineTool({
      name: 'get_my_appointments',
      description: 'Upcoming appointments of the person',
      input: z.object({}),
      run: (_args, ctx) => {
        if (calendar.offline) throw new Error('calendar offline');
        loads.push(accountOf(ctx));
        return mine(accountOf(ctx)).map((appointment) => ({ id: appointment.id, description: appointment.what }));
      },
    }),
    defineTool({
      name: 'cancel_appointment_by_id',
      description: 'Cancels one appointment of the person',
      input: z.object({ appointment_id: z.number().int() }),
      run: ({ appointment_id }, ctx) => {
        cancelled.push(appointment_id);
        book.set(
          accountOf(ctx),
          mine(accountOf(ctx)).filter((appointment) => appointment.id !== appointment_id),
        );
        return 'cancelled';
      },
    }),
  ];
  return { tools, loads, cancelled, book, calendar };
}

/** The focus key of a direct conversation: its session and its owner. */
async function ownerOf(palaver: Palaver, sessionId: string) {
  return { sessionId, userId: (await palaver.store.sessions.findById(sessionId))!.userId };
}

const focusConfig = {
  focus: {
    stages: [
      { id: 'view', keywords: ['show my appointments'], viewing: true, needs: ['appointment'], scenario: 'List the appointments briefly.' },
      { id: 'cancel', keywords: ['cancel'], needs: ['appointment'], scenario: 'Cancel the appointment the person means.' },
      { id: 'chat' },
    ],
    entities: [
      {
        type: 'appointment',
        loadTool: 'get_my_appointments',
        ttlSeconds: 60,
        refreshAfter: ['cancel_appointment_by_id'],
        idArguments: { cancel_appointment_by_id: ['appointment_id'] },
      },
    ],
  },
};

/** Cancels the haircut by the id it finds in the hidden block (or the id it is told to try), then answers. */
function cancellingModel(tryId?: number) {
  return (call: ScriptedCall) => {
    const last = call.messages.at(-1);
    if (last?.type === 'tool_result') return { text: `done: ${last.output}` };
    const id = tryId ?? Number(/- id (\d+): "Haircut/.exec(call.instructions)?.[1]);
    return { toolCalls: [{ name: 'cancel_appointment_by_id', arguments: { appointment_id: id } }] };
  };
}

describe('entities in focus, end to end', () => {
  it('the hidden block carries the ids and the cancel tool is called with the right one; nothing of it is shown', async () => {
    const { tools, cancelled } = salon({
      alice: [
        { id: 41, what: 'Manicure with Olga, 2026-12-03 15:30' },
        { id: 42, what: 'Haircut with Anna, 2026-12-01 10:00' },
      ],
    });
    harness = await createHarness(cancellingModel());
    const palaver = await harness.start(focusConfig, { tools });
    const reply = await palaver.chat({ userId: 'alice', text: 'Please cancel the haircut' });

    expect(cancelled).toEqual([42]);
    expect(reply.text).toBe('done: cancelled');
    const first = harness.model.calls[0]!;
    expect(first.instructions).toContain('- id 42: "Haircut with Anna');
    expect(first.instructions).toContain('Cancel the appointment the person means.');
    expect(lastUserText(first)).toBe('Please cancel the haircut');
    const stored = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    expect(stored.filter((message) => message.audience === 'display').map((message) => message.content)).toEqual([
      'Please cancel the haircut',
      'done: cancelled',
    ]);
    expect(stored.some((message) => message.content.includes('Hidden context'))).toBe(false);
    // The cancel changed the appointments: the next turn that needs them loads them afresh.
    expect(await palaver.store.focus.get(await ownerOf(palaver, reply.sessionId), 'appointment')).toBeUndefined();
  });

  it('an id not in focus is refused back to the model and the tool does not run', async () => {
    const { tools, cancelled } = salon({ alice: [{ id: 42, what: 'Haircut with Anna' }], bob: [{ id: 7, what: 'Haircut with Oleg' }] });
    harness = await createHarness(cancellingModel(7));
    const palaver = await harness.start(focusConfig, { tools });
    const reply = await palaver.chat({ userId: 'alice', text: 'cancel my haircut' });

    expect(cancelled).toEqual([]);
    expect(reply.text).toMatch(/^done: Error: Refused: appointment_id=7 is not the id .* \(ids in focus: 42\)/);
  });

  it('a tool may declare its id arguments itself; a type the config does not have stops the start', async () => {
    const { tools, cancelled } = salon({ alice: [{ id: 42, what: 'Haircut with Anna' }] });
    const declared = tools.map((tool) => (tool.name === 'cancel_appointment_by_id' ? { ...tool, focusIds: { appointment_id: 'appointment' } } : tool));
    const withoutIdArguments = { focus: { ...focusConfig.focus, entities: [{ ...focusConfig.focus.entities[0], idArguments: {} }] } };
    harness = await createHarness(cancellingModel(7));
    const palaver = await harness.start(withoutIdArguments, { tools: declared });
    expect((await palaver.chat({ userId: 'alice', text: 'cancel my haircut' })).text).toMatch(/^done: Error: Refused: appointment_id=7/);
    expect(cancelled).toEqual([]);

    const unknown = tools.map((tool) => ({ ...tool, focusIds: { appointment_id: 'invoice' } }));
    await expect(harness.start(withoutIdArguments, { tools: unknown })).rejects.toThrow(/declares appointment_id an id of "invoice"/);
  });

  it('focus survives a restart, and a focus older than its TTL is reloaded', async () => {
    const { tools, loads } = salon({
      alice: [
        { id: 42, what: 'Haircut with Anna' },
        { id: 43, what: 'Haircut with Anna, again' },
      ],
    });
    let now = Date.parse('2026-11-24T10:00:00Z');
    harness = await createHarness((call) => ({ text: `seen ${/- id (\d+)/g.exec(call.instructions)?.[1] ?? 'none'}` }));
    const first = await harness.start(focusConfig, { tools, now: () => new Date(now) });
    const { sessionId } = await first.chat({ userId: 'alice', text: 'show my appointments' });
    expect(loads).toEqual(['alice']);
    await first.close();

    const second = await harness.start(focusConfig, { tools, now: () => new Date(now) });
    await second.chat({ userId: 'alice', text: 'show my appointments' });
    expect(loads).toEqual(['alice']); // still fresh: read from the focus table, not loaded again
    expect(await second.store.focus.get(await ownerOf(second, sessionId), 'appointment')).toMatchObject({ entities: [{ id: 42 }, { id: 43 }] });

    now += 61_000;
    await second.chat({ userId: 'alice', text: 'show my appointments' });
    expect(loads).toEqual(['alice', 'alice']);
  });

  it('"show my appointments" with none gives the fixed localised reply and no model call', async () => {
    const { tools } = salon({});
    harness = await createHarness(() => ({ text: 'the model should not be asked' }));
    const palaver = await harness.start(focusConfig, { tools });
    expect((await palaver.chat({ userId: 'carol', text: 'Show my appointments' })).text).toBe('You have nothing booked right now.');
    expect(harness.model.calls).toHaveLength(0);
  });
});

describe('the stage classification call, end to end', () => {
  const classified = {
    focus: {
      ...focusConfig.focus,
      stages: [
        { ...focusConfig.focus.stages[0], description: 'The person wants to see their appointments' },
        { ...focusConfig.focus.stages[1], description: 'The person wants to call off an appointment' },
        { id: 'chat', description: 'Anything else' },
      ],
      classifier: { enabled: true, model: { name: 'cheap-classifier' }, recentMessages: 2 },
    },
  };

  /** The classifier answers with `classify`; the agent's model cancels what the hidden block calls the haircut, or greets. */
  function classifyingModel(classify: (call: ScriptedCall) => string) {
    const cancelling = cancellingModel();
    const agent = (call: ScriptedCall): ScriptedReply => (call.instructions.includes('## Current stage: cancel') ? cancelling(call) : { text: 'Hello!' });
    return (call: ScriptedCall): ScriptedReply =>
      call.output?.name === 'conversation_stage'
        ? { text: classify(call), usage: { input: 30, output: 3 } }
        : { ...agent(call), usage: { input: 10, output: 2 } };
  }

  it('picks a stage no keyword matches: its scenario and focus reach the main call, and its tokens count with the turn', async () => {
    const { tools, cancelled } = salon({ alice: [{ id: 42, what: 'Haircut with Anna, 2026-12-01 10:00' }] });
    harness = await createHarness(classifyingModel((call) => JSON.stringify({ stage: lastUserText(call)?.includes('drop') ? 'cancel' : 'chat' })));
    const palaver = await harness.start(classified, { tools });
    await palaver.chat({ userId: 'alice', text: 'Hello there' });
    harness.model.calls.length = 0;
    const reply = await palaver.chat({ userId: 'alice', text: "I can't make it tomorrow, drop the haircut" });

    expect(cancelled).toEqual([42]);
    const [classifier, main] = harness.model.calls;
    expect(classifier).toMatchObject({ model: 'cheap-classifier', toolNames: [], stream: false, output: { name: 'conversation_stage' } });
    expect(classifier!.output!.schema).toMatchObject({ properties: { stage: { enum: ['view', 'cancel', 'chat'] } } });
    expect(classifier!.instructions).toContain('- cancel: The person wants to call off an appointment');
    // Only the last few messages, and none of the agent's instructions.
    expect(classifier!.messages.map((item) => (item.type === 'message' ? item.content : item.type))).toEqual([
      'Hello!',
      "I can't make it tomorrow, drop the haircut",
    ]);
    expect(classifier!.instructions).not.toContain('You are a test agent.');
    expect(main!.model).toBe('scripted');
    expect(main!.instructions).toContain('Cancel the appointment the person means.');
    expect(main!.instructions).toContain('- id 42: "Haircut with Anna');

    const stored = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    const replyRow = stored.at(-1)!;
    // The classifier (30 in, 3 out) and the agent's two calls (10 in, 2 out each).
    expect([replyRow.inputTokens, replyRow.outputTokens]).toEqual([50, 7]);
    expect(replyRow.meta?.['models']).toEqual(['cheap-classifier', 'scripted']);
  });

  it('makes no classification call when a rule matches', async () => {
    const { tools, cancelled } = salon({ alice: [{ id: 42, what: 'Haircut with Anna' }] });
    harness = await createHarness(classifyingModel(() => JSON.stringify({ stage: 'view' })));
    const palaver = await harness.start(classified, { tools });
    expect((await palaver.chat({ userId: 'alice', text: 'Please cancel the haircut' })).text).toBe('done: cancelled');
    expect(cancelled).toEqual([42]);
    expect(harness.model.calls.some((call) => call.output !== undefined)).toBe(false);
  });

  it('an answer invalid twice, or a failed call, leaves the default stage, and the turn completes', async () => {
    const { tools } = salon({ alice: [{ id: 42, what: 'Haircut with Anna' }] });
    let failCall = false;
    harness = await createHarness((call) => {
      if (call.output?.name === 'conversation_stage')
        return failCall ? { error: { status: 500, message: 'classifier down' } } : { text: '{"stage": "refund"}', usage: { input: 30, output: 3 } };
      return { text: `answered in ${/## Current stage: (\w+)/.exec(call.instructions)?.[1] ?? 'the default stage'}`, usage: { input: 10, output: 2 } };
    });
    const palaver = await harness.start(classified, { tools });
    const reply = await palaver.chat({ userId: 'alice', text: 'What a lovely day' });

    expect(reply.text).toBe('answered in the default stage');
    expect(harness.model.calls.map((call) => call.output?.name)).toEqual(['conversation_stage', 'conversation_stage', undefined]);
    // The repair told the model what was wrong with its first answer.
    expect(lastUserText(harness.model.calls[1]!)).toMatch(/did not match the required "conversation_stage" JSON schema \(stage: /);
    expect(harness.logs.some((line) => line['msg'] === 'stage classification failed; using the default stage')).toBe(true);
    const stored = await palaver.store.messages.listRecent(reply.sessionId, { limit: 20 });
    expect([stored.at(-1)!.inputTokens, stored.at(-1)!.outputTokens]).toEqual([70, 8]);
    expect((await palaver.store.sessions.findById(reply.sessionId))?.status).toBe('completed');

    failCall = true;
    harness.model.calls.length = 0;
    expect((await palaver.chat({ userId: 'alice', text: 'And tomorrow?' })).text).toBe('answered in the default stage');
    expect(harness.model.calls.map((call) => call.output?.name)).toEqual(['conversation_stage', undefined]);
  });
});

describe('focus around the staged flow', () => {
  it('each stage still calls its own model, with the stage scenario in its instructions', async () => {
    const { tools } = salon({ alice: [{ id: 42, what: 'Haircut with Anna' }] });
    harness = await createHarness((call) => {
      if (call.output?.name === 'intent')
        return { text: JSON.stringify({ direct: true, answer: 'You have a haircut with Anna.', intent: 'see appointments', details: '' }) };
      return { text: 'unexpected call' };
    });
    const palaver = await harness.start(
      {
        ...focusConfig,
        agent: { flow: 'staged', type: 'salon' },
        staged: {
          types: { salon: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } },
        },
      },
      { tools },
    );
    expect((await palaver.chat({ userId: 'alice', text: 'show my appointments' })).text).toBe('You have a haircut with Anna.');
    expect(harness.model.calls.map((call) => call.model)).toEqual(['intent-model']);
    expect(harness.model.calls[0]!.instructions).toContain('List the appointments briefly.');
  });
});

describe('focus in a group conversation', () => {
  it("picks the stage from what the member wrote, not from their name's label", async () => {
    const { tools, loads } = salon({ ann: [{ id: 42, what: 'Haircut with Anna' }] });
    harness = await createHarness((call) => ({ text: /## Current stage: (\w+)/.exec(call.instructions)?.[1] ?? 'no stage scenario' }));
    const group = new MemoryChannel({ name: 'group' });
    await harness.start(focusConfig, { tools, channels: [group] });
    const said = await group.say('hello all', { accountId: 'ann', displayName: 'Please cancel', conversationId: 'family-chat', conversationKind: 'shared' });
    expect((await group.reply(said)).outcome.reply).toBe('no stage scenario');
    expect(loads).toEqual([]);
  });

  it("belongs to each member: one member's turn never sees another's entities nor passes their ids", async () => {
    const { tools, cancelled, loads } = salon({
      ann: [{ id: 42, what: 'Haircut with Anna, 2026-12-01 10:00' }],
      ben: [{ id: 7, what: 'Beard trim with Oleg' }],
    });
    harness = await createHarness((call) => {
      const last = call.messages.at(-1);
      if (last?.type === 'tool_result') return { text: `done: ${last.output}` };
      // Ben's turn tries Ann's appointment id, as a confused (or persuaded) model would.
      if (call.instructions.includes('## Current stage: cancel'))
        return { toolCalls: [{ name: 'cancel_appointment_by_id', arguments: { appointment_id: 42 } }] };
      return { text: 'here they are' };
    });
    const group = new MemoryChannel({ name: 'group' });
    await harness.start(focusConfig, { tools, channels: [group] });
    const say = (accountId: string, text: string) => group.say(text, { accountId, conversationId: 'family-chat', conversationKind: 'shared' });

    await group.reply(await say('ann', 'show my appointments'));
    expect(harness.model.calls[0]!.instructions).toContain('- id 42: "Haircut with Anna');
    const fromBen = await group.reply(await say('ben', 'cancel the haircut'));

    const bensCall = harness.model.calls[1]!;
    expect(bensCall.instructions).not.toContain('Haircut with Anna');
    expect(bensCall.instructions).toContain('- id 7: "Beard trim with Oleg"');
    expect(loads).toEqual(['ann', 'ben']);
    expect(cancelled).toEqual([]);
    expect(fromBen.outcome.reply).toMatch(/^done: Error: Refused: appointment_id=42 is not the id .* \(ids in focus: 7\)/);
  });
});

describe('when focus cannot be loaded', () => {
  const UNAVAILABLE = 'could not be loaded just now';
  const failures = (palaver: Palaver) => palaver.metrics.registry.getSingleMetricAsString('palaver_focus_load_failures_total');

  it('a loader that throws: the turn goes on without focus (logged, counted, told to the model), never an apology', async () => {
    const { tools, cancelled, calendar } = salon({ alice: [{ id: 42, what: 'Haircut with Anna, 2026-12-01 10:00' }] });
    calendar.offline = true;
    harness = await createHarness((call) => {
      const last = call.messages.at(-1);
      if (last?.type === 'tool_result') return { text: `done: ${last.output}` };
      if (call.instructions.includes('## Current stage: cancel')) return cancellingModel(42)(call);
      return { text: call.instructions.includes(UNAVAILABLE) ? "I can't see your appointments right now." : 'Here they are.' };
    });
    const palaver = await harness.start(focusConfig, { tools });

    // A viewing stage whose loader failed is not "nothing booked": the model answers, knowing the list is unavailable.
    const viewed = await palaver.chat({ userId: 'alice', text: 'show my appointments' });
    expect(viewed.text).toBe("I can't see your appointments right now.");
    expect(harness.model.calls[0]!.instructions).toContain(`### appointment\n(${UNAVAILABLE}`);
    expect((await palaver.store.sessions.findById(viewed.sessionId))?.status).toBe('completed');
    const logged = harness.logs.find((line) => line['msg'] === 'focus could not be loaded; the turn goes on without it');
    expect(logged).toMatchObject({
      entityType: 'appointment',
      correlationId: expect.any(String),
      err: { message: expect.stringContaining('calendar offline') },
    });
    expect(await failures(palaver)).toContain('palaver_focus_load_failures_total{entity="appointment"} 1');
    // A failed load is not remembered as focus: nothing is stored for the person.
    expect(await palaver.store.focus.get(await ownerOf(palaver, viewed.sessionId), 'appointment')).toBeUndefined();

    // Without focus no id passes the check: the cancel is refused with the reason, and nothing is cancelled.
    const refused = await palaver.chat({ userId: 'alice', text: 'cancel the haircut' });
    expect(cancelled).toEqual([]);
    expect(refused.text).toMatch(new RegExp(`^done: Error: Refused: the person's appointment ${UNAVAILABLE}, so appointment_id=42 cannot be checked`));
    expect(await failures(palaver)).toContain('palaver_focus_load_failures_total{entity="appointment"} 2');

    // Once the calendar answers again, the next turn loads the focus and the cancel goes through.
    calendar.offline = false;
    expect((await palaver.chat({ userId: 'alice', text: 'cancel the haircut' })).text).toBe('done: cancelled');
    expect(cancelled).toEqual([42]);
  });

  it('a loader that times out (an MCP server slower than its timeoutMs): the turn goes on without focus', async () => {
    const token = 'focus-timeout-token-7c1e';
    mcp = await startLogisticsMcpServer({ port: 0, token, toolDelayMs: 5_000 });
    harness = await createHarness((call) => ({
      text: call.instructions.includes(UNAVAILABLE) ? 'Your cargo cannot be seen right now.' : 'Here is your cargo.',
    }));
    const palaver = await harness.start({
      mcp: { servers: [{ label: 'logistics', url: mcp.url, bearerToken: token, userIdArgument: 'user_id', timeoutMs: 200 }] },
      focus: {
        stages: [{ id: 'cargo', keywords: ['my cargo'], needs: ['cargo'] }, { id: 'chat' }],
        entities: [{ type: 'cargo', loadTool: 'get_user_cargoes' }],
      },
    });

    const reply = await palaver.chat({ userId: 'olga', text: 'where is my cargo?' });
    expect(reply.text).toBe('Your cargo cannot be seen right now.');
    expect((await palaver.store.sessions.findById(reply.sessionId))?.status).toBe('completed');
    expect(mcp.calls.map((call) => call.name)).toEqual(['get_user_cargoes']);
    const logged = harness.logs.find((line) => line['msg'] === 'focus could not be loaded; the turn goes on without it');
    expect(logged).toMatchObject({ entityType: 'cargo', err: { message: expect.stringContaining('timed out after 200 ms') } });
    expect(await failures(palaver)).toContain('palaver_focus_load_failures_total{entity="cargo"} 1');
  });
});
