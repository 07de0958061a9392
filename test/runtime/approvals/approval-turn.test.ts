import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../../src/app.js';
import { defineTool } from '../../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../../support/palaver-harness.js';
import { cancellableSalon, cancellingModel } from '../../support/approval-tools.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(tools: readonly ReturnType<typeof defineTool>[], config: Record<string, unknown> = {}): Promise<Palaver> {
  harness = await createHarness(cancellingModel);
  return harness.start(config, { tools });
}

describe('a tool call that needs the person’s yes', () => {
  it('asks first, runs nothing and calls no model while waiting, then runs once on "yes" and the model answers with its result', async () => {
    const { runs, cancel } = cancellableSalon();
    const palaver = await start([cancel]);
    const question = await palaver.chat({ userId: 'ada', text: 'cancel my appointment please' });
    expect(question.text).toContain('Cancel appointment a-17');
    expect(question.text).toContain('Reply "yes"');
    expect(runs).toEqual([]);
    expect(harness!.model.calls).toHaveLength(1);
    const pending = await palaver.store.approvals.pendingFor(question.sessionId);
    expect(pending).toMatchObject({ tool: 'cancel_appointment', by: 'person', status: 'pending', summary: 'Cancel appointment a-17' });

    const answer = await palaver.chat({ userId: 'ada', text: 'Yes!' });
    expect(answer.text).toBe('Done: Appointment a-17 cancelled.');
    expect(runs).toHaveLength(1);
    // The model asked once before and once after; the first call was replayed from the journal, not asked again.
    expect(harness!.model.calls).toHaveLength(2);
    expect((await palaver.store.approvals.get(pending!.id))?.status).toBe('approved');
    expect(await palaver.store.approvals.pendingFor(question.sessionId)).toBeUndefined();
    const history = await palaver.store.messages.listRecent(question.sessionId, { limit: 20, audience: 'display' });
    expect(history.map((message) => [message.role, message.content])).toEqual([
      ['user', 'cancel my appointment please'],
      ['assistant', question.text],
      ['user', 'Yes!'],
      ['assistant', 'Done: Appointment a-17 cancelled.'],
    ]);
    // Each model call is paid once: the question carried the first, the answer only the second (the first replayed).
    const [, asked, , answered] = history;
    const session = (await palaver.store.sessions.findById(question.sessionId))!;
    expect(asked!.inputTokens).toBeGreaterThan(0);
    expect(answered!.inputTokens).toBeGreaterThan(0);
    expect(session.inputTokens).toBe(asked!.inputTokens + answered!.inputTokens);
    expect(question.usage.inputTokens + answer.usage.inputTokens).toBe(session.inputTokens);
  });

  it('never runs a declined call: the model is told it was declined and answers so', async () => {
    const { runs, cancel } = cancellableSalon();
    const palaver = await start([cancel]);
    const question = await palaver.chat({ userId: 'bo', text: 'cancel it' });
    const answer = await palaver.chat({ userId: 'bo', text: 'нет' });
    expect(answer.text).toContain('Declined by the person');
    expect(runs).toEqual([]);
    expect((await palaver.store.approvals.forTurn((await palaver.store.approvals.list({ limit: 1 }))[0]!.turnId))[0]?.status).toBe('declined');
    expect(question.sessionId).toBe(answer.sessionId);
  });

  it('asks again once when the answer is unclear, and declines on a second unclear one', async () => {
    const { runs, cancel } = cancellableSalon();
    const palaver = await start([cancel]);
    await palaver.chat({ userId: 'cy', text: 'cancel it' });
    const again = await palaver.chat({ userId: 'cy', text: 'what do you mean?' });
    expect(again.text).toContain('I did not understand');
    expect(again.text).toContain('Cancel appointment a-17');
    expect(harness!.model.calls).toHaveLength(1);
    const answer = await palaver.chat({ userId: 'cy', text: 'hmm, maybe later today' });
    expect(answer.text).toContain('Declined by the person');
    expect(runs).toEqual([]);
  });

  it('declines as expired when nobody answers in time, and a late yes changes nothing', async () => {
    const { runs, cancel } = cancellableSalon();
    let now = new Date('2026-12-07T10:00:00Z');
    harness = await createHarness(cancellingModel);
    const palaver = await harness.start({ tools: { approvalTimeoutMinutes: 5 } }, { tools: [cancel], now: () => now });
    const question = await palaver.chat({ userId: 'di', text: 'cancel it' });
    const pending = (await palaver.store.approvals.pendingFor(question.sessionId))!;
    expect(pending.expiresAt.toISOString()).toBe('2026-12-07T10:05:00.000Z');
    expect(await palaver.approvals.expireDue()).toBe(0);
    now = new Date('2026-12-07T10:05:00Z');
    expect(await palaver.approvals.expireDue()).toBe(1);
    await expect.poll(async () => (await palaver.store.messages.listRecent(question.sessionId, { limit: 10, audience: 'display' })).length).toBe(4);
    const history = await palaver.store.messages.listRecent(question.sessionId, { limit: 10, audience: 'display' });
    expect(history.at(-1)?.content).toContain('Not approved in time');
    expect(runs).toEqual([]);
    expect(await palaver.approvals.decide(pending.id, 'approved', { kind: 'person', channel: 'api', accountId: 'di' })).toEqual({ kind: 'expired' });
    expect(runs).toEqual([]);
  });
});

describe('who approves, and what runs meanwhile', () => {
  it('an operator decides an operator request: the person is told the team checks it, their own yes decides nothing', async () => {
    const runs: string[] = [];
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds an order',
      input: z.object({ amount: z.number() }),
      // Small refunds need nobody; large ones the team approves.
      approval: ({ amount }) => (amount > 100 ? 'operator' : undefined),
      run: ({ amount }) => {
        runs.push(String(amount));
        return `Refunded ${amount} EUR.`;
      },
    });
    harness = await createHarness((call) => {
      const result = [...call.messages].reverse().find((item) => item.type === 'tool_result') as { output?: string } | undefined;
      if (result) return { text: `Done: ${result.output}` };
      const amount = /(\d+)/.exec(call.messages.filter((item) => item.type === 'message').at(-1)?.content ?? '')?.[1];
      if (amount === undefined) return { text: 'How can I help?' };
      return { toolCalls: [{ name: 'refund', arguments: { amount: Number(amount) } }] };
    });
    const palaver = await harness.start({}, { tools: [refund] });
    expect((await palaver.chat({ userId: 'eve', text: 'refund 30' })).text).toBe('Done: Refunded 30 EUR.');
    const question = await palaver.chat({ userId: 'eve', text: 'refund 900' });
    expect(question.text).toContain('refund: amount 900');
    expect(question.text).toContain('A member of our team decides this one.');
    const pending = (await palaver.store.approvals.pendingFor(question.sessionId))!;
    expect(pending.by).toBe('operator');
    // The person cannot decide it, by words or by a channel's button.
    void palaver.chat({ userId: 'eve', text: 'yes' }).catch(() => undefined);
    await expect.poll(async () => (await palaver.store.inbound.listQueued(question.sessionId)).length).toBe(1);
    expect(await palaver.approvals.decide(pending.id, 'approved', { kind: 'person', channel: 'api', accountId: 'eve' })).toEqual({
      kind: 'refused',
      reason: 'operator',
    });
    expect(runs).toEqual(['30']);

    expect(await palaver.approvals.decide(pending.id, 'approved', { kind: 'operator', name: 'dana' })).toEqual({ kind: 'decided', status: 'approved' });
    await expect.poll(() => runs).toEqual(['30', '900']);
    await expect
      .poll(async () => (await palaver.store.messages.listRecent(question.sessionId, { limit: 20, audience: 'display' })).map((m) => m.content))
      .toContain('Done: Refunded 900 EUR.');
    const audit = await palaver.store.adminActions.list({ limit: 5, sessionId: question.sessionId });
    expect(audit.map((action) => [action.action, action.actor, action.details['decision'], action.details['shown']])).toEqual([
      ['approval', 'dana', 'approved', 'refund: amount 900'],
    ]);
    expect(await palaver.metrics.registry.getSingleMetricAsString('palaver_tool_approvals_total')).toContain(
      'palaver_tool_approvals_total{decision="approved"} 1',
    );
  });

  it('runs the round’s other calls at once and once only; a second call needing approval in that round is asked about next', async () => {
    const { runs, cancel } = cancellableSalon();
    let lookups = 0;
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks an appointment up',
      input: z.object({}),
      readOnly: true,
      run: () => {
        lookups++;
        return 'a-17 is a haircut';
      },
    });
    harness = await createHarness((call) => {
      const results = call.messages.filter((item) => item.type === 'tool_result') as { output: string }[];
      if (results.length > 0) return { text: results.map((result) => result.output).join(' | ') };
      return {
        toolCalls: [
          { name: 'lookup', arguments: {} },
          { name: 'cancel_appointment', arguments: { appointment_id: 'a-17' } },
          { name: 'cancel_appointment', arguments: { appointment_id: 'a-18' } },
        ],
      };
    });
    const palaver = await harness.start({}, { tools: [cancel, lookup] });
    const question = await palaver.chat({ userId: 'fay', text: 'cancel both' });
    expect(question.text).toContain('Cancel appointment a-17');
    expect(lookups).toBe(1);
    // The first is approved and runs; the turn comes to the second and asks about it, with no model call between.
    const next = await palaver.chat({ userId: 'fay', text: 'yes' });
    expect(next.text).toContain('Cancel appointment a-18');
    expect(runs.map((run) => run.split('@')[0])).toEqual(['a-17']);
    const answer = await palaver.chat({ userId: 'fay', text: 'yes' });
    expect(answer.text).toBe('a-17 is a haircut | Appointment a-17 cancelled. | Appointment a-18 cancelled.');
    // Each ran once, under the turn's keys; the lookup was not run again; the model was asked twice in all.
    expect(runs.map((run) => run.split('@')[0])).toEqual(['a-17', 'a-18']);
    expect(new Set(runs.map((run) => run.split('@')[1]!.split(':')[0])).size).toBe(1);
    expect(lookups).toBe(1);
    expect(harness!.model.calls).toHaveLength(2);
  });
});

describe('MCP tools that need approval (mcp.servers[].approval)', () => {
  it('asks before a listed tool of a real MCP server runs, then runs it once for the bound user; other tools run at once', async () => {
    const { startLogisticsMcpServer } = await import('../../../examples/logistics/mcp-server.js');
    const mcp = await startLogisticsMcpServer({ port: 0, token: 'mcp-token-for-approvals-1234' });
    try {
      harness = await createHarness((call) => {
        const last = call.messages.at(-1);
        if (last?.type === 'tool_result') return { text: `Result: ${last.output}` };
        const said = call.messages.filter((item) => item.type === 'message').at(-1)?.content ?? '';
        if (/list/.test(said)) return { toolCalls: [{ name: 'get_user_cargoes', arguments: {} }] };
        if (/ship/.test(said)) return { toolCalls: [{ name: 'cargo_add', arguments: { from: 'Kyiv', to: 'Lviv', weight_kg: 12 } }] };
        return { text: 'ok' };
      });
      const palaver = await harness.start({
        mcp: {
          servers: [
            {
              label: 'logistics',
              url: mcp.url,
              bearerToken: 'mcp-token-for-approvals-1234',
              userIdArgument: 'user_id',
              approval: { tools: ['cargo_add'], by: 'person' },
            },
          ],
        },
      });
      expect((await palaver.chat({ userId: 'gus', text: 'list my cargoes' })).text).toBe('Result: No cargoes yet.');
      const question = await palaver.chat({ userId: 'gus', text: 'ship 12 kg from Kyiv to Lviv' });
      expect(question.text).toContain('cargo_add: from "Kyiv", to "Lviv", weight_kg 12');
      expect((await palaver.chat({ userId: 'gus', text: 'list my cargoes' })).text).toContain('I did not understand');
      expect((await palaver.chat({ userId: 'gus', text: 'ok' })).text).toMatch(/^Result: Cargo \S+ added: .*Kyiv.*Lviv/);
      expect((await palaver.chat({ userId: 'gus', text: 'list my cargoes' })).text).toMatch(/^Result: \S+: .*Kyiv.*Lviv/);
    } finally {
      await mcp.close();
    }
  });
});

describe('the approval rule and the summary', () => {
  it('fails closed on a rule that throws, and falls back to the quoted arguments when describe fails', async () => {
    const { approvalRequirement } = await import('../../../src/runtime/tools/approval-requirement.js');
    const ctx = { userId: 'u', sessionId: 's', conversationId: 'c', role: null };
    const broken = () => {
      throw new Error('rule bug');
    };
    expect(approvalRequirement({ name: 'pay', approval: broken }, { amount: 5 }, ctx)).toEqual({ by: 'person', summary: 'pay: amount 5' });
    expect(approvalRequirement({ name: 'pay', approval: () => undefined }, { amount: 5 }, ctx)).toBeUndefined();
    expect(approvalRequirement({ name: 'pay' }, { amount: 5 }, ctx)).toBeUndefined();
    const long = 'x'.repeat(500);
    const summary = approvalRequirement({ name: 'send', approval: () => 'operator', describe: broken }, { to: 'a\u202Eb', body: long }, ctx)!;
    expect(summary.by).toBe('operator');
    // Direction overrides and control characters go; each value is cut.
    expect(summary.summary).toBe(`send: to "ab", body "${'x'.repeat(118)}…`);
    const described = approvalRequirement({ name: 'send', approval: () => 'person', describe: () => `Send it\u0007 ${'y'.repeat(700)}` }, {}, ctx)!;
    expect(described.summary.length).toBe(600);
    expect(described.summary.startsWith('Send it y')).toBe(true);
  });

  it('reads short answers in en, ru, uk and zh, and nothing longer or different as yes', async () => {
    const { answerInWords } = await import('../../../src/runtime/approvals/answer-in-words.js');
    const cases: [string, string][] = [
      ['Yes!', 'yes'],
      ['ok, go ahead', 'yes'],
      ['Да, давай', 'yes'],
      ['так', 'yes'],
      ['好的', 'yes'],
      ['no', 'no'],
      ["please don't", 'no'],
      ['нет', 'no'],
      ['не надо', 'no'],
      ['ні', 'no'],
      ['不要。', 'no'],
      ['yes but move it to friday instead', 'unclear'],
      ['what time is it?', 'unclear'],
      ['👍', 'unclear'],
      ['', 'unclear'],
      ['yes no maybe', 'unclear'],
    ];
    expect(cases.map(([text]) => [text, answerInWords(text)])).toEqual(cases);
  });
});
