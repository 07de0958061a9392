import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { fullCatalogue } from '../../src/i18n/index.js';
import { sumCosts } from '../../src/domain/money.js';
import type { ModelScript, ScriptedReply } from '../../src/testing/index.js';
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
// Every turn is one model call of 1000 input tokens at 1 USD per million: 0.001 USD.
const PRICES = { scripted: { input: '1', output: '0' } };
const TURN_COST = '0.001';
const ONE_CALL: ScriptedReply = { text: 'answered', usage: { input: 1000, output: 0 } };
// The turns' clock: the user's day (UTC, the default zone) is 2026-03-01.
const now = () => new Date('2026-03-01T12:00:00Z');

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

  it.each([
    // The reservation covers a turn: the day's spend stays within the cap.
    { reservePerTurn: '0.001', admitted: 2 },
    // The reservation is below a turn's cost: each turn running at once may overshoot by the difference.
    { reservePerTurn: '0.0006', admitted: 3 },
  ])('30 concurrent conversations of one user spend at most the cap plus what the admitted turns cost above their reservation (reserve $reservePerTurn)', async ({ reservePerTurn, admitted }) => {
    const CONVERSATIONS = 30;
    let waiting = 0;
    let settled = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Every turn's model call waits until each of the 30 turns has either reached the model or been answered without
    // it: the turns really run at once, whatever the scheduling.
    const check = () => {
      if (waiting + settled === CONVERSATIONS) open();
    };
    const script: ModelScript = async () => {
      waiting += 1;
      check();
      await gate;
      return ONE_CALL;
    };
    harness = await createHarness(script);
    const cap = '0.002';
    const palaver = await harness.start({ ...database(), model: { prices: PRICES, timeoutMs: 60_000 }, budgets: { perUserPerDay: cap, reservePerTurn } }, { now });
    const ann = userId();

    const replies = await Promise.all(
      Array.from({ length: CONVERSATIONS }, (_, index) =>
        palaver.chat({ userId: ann, text: 'hello', conversationId: `${ann}-${index}` }).finally(() => {
          settled += 1;
          check();
        }),
      ),
    );

    const answered = replies.filter((reply) => reply.text === 'answered');
    expect(answered).toHaveLength(admitted);
    expect(replies.filter((reply) => reply.text === NOTICE)).toHaveLength(CONVERSATIONS - admitted);
    expect(harness.model.calls).toHaveLength(admitted);
    // The bound: cap + Σ over the turns admitted together of (their cost − their reservation), when above zero.
    const overshoot = Math.max(0, Number(TURN_COST) - Number(reservePerTurn));
    const spent = await totalSpend(palaver, ann);
    expect(Number(spent)).toBeLessThanOrEqual(Number(cap) + admitted * overshoot + 1e-12);
    expect(spent).toBe(sumCosts(Array.from({ length: admitted }, () => TURN_COST)));
    // Settled: nothing stays reserved, so the day's spend is all that counts now.
    const user = (await palaver.store.users.findByAccount('api', ann))!;
    expect(await palaver.store.spend.daily(user.id, '2026-03-01')).toEqual([{ currency: 'USD', cost: spent }]);
  });

  it('answers a turn that starts under the cap to the end, and refuses the next one before any model call (>= the cap)', async () => {
    harness = await createHarness(() => ONE_CALL);
    // The second turn starts at 0.001 spent + 0.001 reserved = exactly the cap: allowed. It ends at exactly the cap:
    // the third is refused.
    const palaver = await harness.start({ ...database(), model: { prices: PRICES }, budgets: { perUserPerDay: '0.002', reservePerTurn: '0.001' } }, { now });
    const ann = userId();
    expect((await palaver.chat({ userId: ann, text: 'one', conversationId: `${ann}-a` })).text).toBe('answered');
    expect((await palaver.chat({ userId: ann, text: 'two', conversationId: `${ann}-b` })).text).toBe('answered');
    expect(await totalSpend(palaver, ann)).toBe('0.002');
    const refused = await palaver.chat({ userId: ann, text: 'three', conversationId: `${ann}-c` });
    expect(refused).toMatchObject({ text: NOTICE, status: 'completed', usage: { cost: '0' } });
    expect(harness.model.calls).toHaveLength(2);
    expect(await totalSpend(palaver, ann)).toBe('0.002');
  });

  it('lets a staged turn that starts under the cap finish every stage and answer; the next turn gets the notice with no model call', async () => {
    // Four calls (intent, execution with a tool round, organization): 0.00048 + 0.003525 + 0.00435 + 0.00048 USD.
    const staged: ModelScript = (call): ScriptedReply => {
      const stage = call.output?.name;
      if (stage === 'intent') return { text: JSON.stringify({ direct: false, answer: null, intent: 'order status', details: lastUserText(call) }), usage: { input: 1000, output: 50 } };
      if (stage === 'execution') {
        if (call.messages.at(-1)?.type !== 'tool_result') return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: { input: 2000, cached: 1500, output: 40 } };
        return { text: JSON.stringify({ status: 'done', summary: 'order 7 shipped', facts: ['7'] }), usage: { input: 2500, cached: 2000, output: 60 } };
      }
      return { text: JSON.stringify({ reply: 'Order 7 has shipped.' }), usage: { input: 800, output: 100 } };
    };
    harness = await createHarness(staged);
    const lookup = defineTool({ name: 'lookup', description: 'Looks up an order', input: z.object({ id: z.number() }), run: ({ id }) => ({ id, status: 'shipped' }) });
    const palaver = await harness.start(
      {
        ...database(),
        agent: { flow: 'staged', type: 'shop' },
        staged: { types: { shop: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } } },
        model: {
          prices: {
            'intent-model': { input: '0.40', output: '1.60' },
            'execution-model': { input: '2.50', cachedInput: '1.25', output: '10' },
            'organization-model': { input: '0.40', output: '1.60' },
          },
        },
        // Below the turn's 0.008835: before, the fourth call (organization) was refused after three were paid for.
        budgets: { perUserPerDay: '0.005' },
      },
      { tools: [lookup], now },
    );
    const ann = userId();
    const first = await palaver.chat({ userId: ann, text: 'where is my order?' });
    expect(first.text).toBe('Order 7 has shipped.');
    expect(first.usage.cost).toBe('0.008835');
    expect(harness.model.calls.map((call) => call.model)).toEqual(['intent-model', 'execution-model', 'execution-model', 'organization-model']);

    const next = await palaver.chat({ userId: ann, text: 'and order 8?' });
    expect(next).toMatchObject({ text: NOTICE, status: 'completed', usage: { cost: '0' } });
    expect(harness.model.calls).toHaveLength(4);
  });
});
