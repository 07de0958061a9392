import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { fullCatalogue } from '../../src/i18n/index.js';
import { sumCosts } from '../../src/domain/money.js';
import type { ModelScript, ScriptedCall, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

let postgres: TestPostgresDatabase;
let harness: Harness | undefined;
beforeAll(async () => {
  postgres = await createTestPostgresDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await postgres?.drop();
});

const NOTICE = fullCatalogue('en')['budget.exceeded'];
// The user's day (UTC, the default zone) is 2026-03-01.
const now = () => new Date('2026-03-01T12:00:00Z');

/**
 * A model that bills like a real one at its worst: about four bytes of the request per input token (what English
 * costs with a GPT tokenizer) and as many output tokens as the request allows (`max_completion_tokens`), so every
 * call costs close to the most it could.
 */
function worstCaseUsage(call: ScriptedCall): { input: number; output: number } {
  const limit = call.body['max_completion_tokens'];
  if (typeof limit !== 'number') throw new Error('the request set no max_completion_tokens: its cost had no ceiling');
  return { input: Math.ceil(Buffer.byteLength(JSON.stringify(call.body)) / 4), output: limit };
}

let runs = 0;
const backends = [
  { name: 'SQLite', database: (): Record<string, unknown> => ({}) },
  // One database for the file: each test has users and conversations of its own.
  { name: 'PostgreSQL', database: (): Record<string, unknown> => ({ database: { url: postgres.url } }) },
];

/** What the user spent in all their conversations: the sum of their sessions' costs. */
async function totalSpend(palaver: Palaver, accountId: string): Promise<string> {
  const user = (await palaver.store.users.findByAccount('api', accountId))!;
  return sumCosts((await palaver.store.sessions.listByUser(user.id, 1000)).map((session) => session.cost));
}

describe.each(backends)('budgets on $name', ({ database }) => {
  const userId = () => `ann-${(runs += 1)}`;

  it('30 concurrent conversations of one user never spend beyond the cap with the default reservation (each call reserves the most it can cost)', async () => {
    const CONVERSATIONS = 30;
    const script: ModelScript = (call) => ({ text: 'answered', usage: worstCaseUsage(call) });
    harness = await createHarness(script);
    // A call: ~0.0003 USD of input and 200 × 4 / 1e6 = 0.0008 of output at most; the cap of 0.01.
    const cap = '0.01';
    const palaver = await harness.start(
      { ...database(), model: { prices: { scripted: { input: '4', output: '4' } }, maxOutputTokens: 200 }, budgets: { perUserPerDay: cap } },
      { now },
    );
    const ann = userId();

    const replies = await Promise.all(
      Array.from({ length: CONVERSATIONS }, (_, index) => palaver.chat({ userId: ann, text: `hello ${index}`, conversationId: `${ann}-${index}` })),
    );

    const answered = replies.filter((reply) => reply.text === 'answered');
    expect(answered.length).toBeGreaterThan(0);
    expect(replies.filter((reply) => reply.text === NOTICE)).toHaveLength(CONVERSATIONS - answered.length);
    expect(harness.model.calls).toHaveLength(answered.length);
    const spent = await totalSpend(palaver, ann);
    expect(Number(spent)).toBeLessThanOrEqual(Number(cap));
    // Settled: nothing stays reserved, so the day's spend is all that counts now.
    const user = (await palaver.store.users.findByAccount('api', ann))!;
    expect(await palaver.store.spend.daily(user.id, '2026-03-01')).toEqual([{ currency: 'USD', cost: spent }]);
    // Before, a twentieth of the cap was reserved per turn: 20 turns of 0.0011 were admitted together, 0.022 spent.
  });

  it('answers turns while their calls fit under the cap, and refuses the call that could cross it before it is made', async () => {
    harness = await createHarness((call) => ({ text: 'answered', usage: worstCaseUsage(call) }));
    const palaver = await harness.start(
      { ...database(), model: { prices: { scripted: { input: '4', output: '4' } }, maxOutputTokens: 200 }, budgets: { perUserPerDay: '0.004' } },
      { now },
    );
    const ann = userId();
    const replies = [];
    for (let turn = 0; turn < 6; turn += 1) replies.push(await palaver.chat({ userId: ann, text: `turn ${turn}`, conversationId: ann }));
    const answered = replies.findIndex((reply) => reply.text === NOTICE);
    // Some turns were answered, then every later one got the notice, with no model call and no cost.
    expect(answered).toBeGreaterThan(0);
    expect(replies.slice(answered).every((reply) => reply.text === NOTICE && reply.usage.cost === '0')).toBe(true);
    expect(harness.model.calls).toHaveLength(answered);
    expect(Number(await totalSpend(palaver, ann))).toBeLessThanOrEqual(0.004);
  });

  it('sends maxOutputTokens to the model, 4096 under a budget when none is set', async () => {
    harness = await createHarness(() => ({ text: 'answered' }));
    const palaver = await harness.start({ ...database(), budgets: { perUserPerDay: '5' } }, { now });
    await palaver.chat({ userId: userId(), text: 'hi' });
    expect(harness.model.calls[0]!.body['max_completion_tokens']).toBe(4096);
  });

  it('stops a staged turn at the call that could cross the cap: the call is not made, the person is told, and what the turn spent is recorded', async () => {
    // Intent then execution (with a tool round), then organization; each at most 200 output tokens.
    const staged: ModelScript = (call): ScriptedReply => {
      const stage = call.output?.name;
      if (stage === 'intent')
        return {
          text: JSON.stringify({ direct: false, answer: null, intent: 'order status', details: lastUserText(call) }),
          usage: { input: 500, output: 50 },
        };
      if (stage === 'execution') {
        if (call.messages.at(-1)?.type !== 'tool_result') return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: { input: 600, output: 40 } };
        return { text: JSON.stringify({ status: 'done', summary: 'order 7 shipped', facts: ['7'] }), usage: { input: 700, output: 60 } };
      }
      return { text: JSON.stringify({ reply: 'Order 7 has shipped.' }), usage: { input: 800, output: 100 } };
    };
    harness = await createHarness(staged);
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up an order',
      input: z.object({ id: z.number() }),
      run: ({ id }) => ({ id, status: 'shipped' }),
    });
    const palaver = await harness.start(
      {
        ...database(),
        agent: { flow: 'staged', type: 'shop' },
        staged: { types: { shop: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } } },
        model: {
          maxOutputTokens: 200,
          prices: {
            'intent-model': { input: '0.40', output: '1.60' },
            'execution-model': { input: '2.50', output: '10' },
            'organization-model': { input: '0.40', output: '1.60' },
          },
        },
        // The intent call fits (at most ~0.001); the execution call could cost ~0.01 at most, beyond the 0.005 left.
        budgets: { perUserPerDay: '0.005' },
      },
      { tools: [lookup], now },
    );
    const ann = userId();
    const first = await palaver.chat({ userId: ann, text: 'where is my order?' });
    expect(first).toMatchObject({ text: NOTICE, status: 'completed' });
    expect(harness.model.calls.map((call) => call.model)).toEqual(['intent-model']);
    // The intent call was paid for: 500 × 0.40 + 50 × 1.60 per million.
    expect(first.usage.cost).toBe('0.00028');
    expect(await totalSpend(palaver, ann)).toBe('0.00028');
  });
});
