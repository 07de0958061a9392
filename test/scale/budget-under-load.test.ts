import { afterEach, describe, expect, it } from 'vitest';
import { sumCosts } from '../../src/domain/money.js';
import { fullCatalogue } from '../../src/i18n/index.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { parseSse } from '../server/sse.js';
import { startCluster, type ClusterDatabase, type PalaverCluster } from '../support/palaver-cluster.js';

// Issue 34, defect 1, as the attack run found it: one `palaver start` process, a daily cap, and 30 conversations of
// one person posted at once by 30 clients. The spend of the day must stay within the cap with the default
// reservation (each model call reserves the most it can cost), on SQLite and on PostgreSQL.

const NOTICE = fullCatalogue('en')['budget.exceeded'];
const CLIENTS = 30;
const CAP = '0.01';

let cluster: PalaverCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

/**
 * One client: posts one web chat run as a server-to-server caller naming the user, and returns its status and body.
 * The attack ran 30 client processes; what the server sees of them is 30 connections at once, which fetch from this
 * process opens as well (its pool has no connection limit), without starting 30 Node processes (20 s of 2 cores).
 */
async function postRun(base: string, userId: string, threadId: string): Promise<{ status: number; body: string }> {
  const id = Math.random().toString(36).slice(2);
  const response = await fetch(`${base}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId: `run-${id}`,
      messages: [{ id: `m-${id}`, role: 'user', content: 'Where is my order?' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: { userId },
    }),
  });
  return { status: response.status, body: await response.text() };
}

/** Bills like a real model at its worst: ~4 request bytes per input token, and every output token the request allows. */
function worstCaseUsage(call: ScriptedCall): { input: number; output: number } {
  const limit = call.body['max_completion_tokens'];
  if (typeof limit !== 'number') throw new Error('the request set no max_completion_tokens: its cost had no ceiling');
  return { input: Math.ceil(Buffer.byteLength(JSON.stringify(call.body)) / 4), output: limit };
}

describe.each<ClusterDatabase>(['sqlite', 'postgres'])('a daily budget under load on %s', (database) => {
  it(`holds: ${CLIENTS} clients at once spend at most the cap`, async () => {
    let arrived = 0;
    let open!: () => void;
    const everyoneIn = new Promise<void>((resolve) => (open = resolve));
    let finished = 0;
    const check = () => {
      if (arrived + finished >= CLIENTS) open();
    };
    cluster = await startCluster({
      database,
      processes: ['a'],
      // Each model call waits until every client either reached the model or got its answer: the turns overlap.
      script: async (call) => {
        arrived += 1;
        check();
        await Promise.race([everyoneIn, new Promise((resolve) => setTimeout(resolve, 5_000))]);
        return { text: 'Order 7 has shipped.', usage: worstCaseUsage(call) };
      },
      config: {
        model: { prices: { 'scripted@a': { input: '4', output: '4' } }, maxOutputTokens: 200 },
        budgets: { perUserPerDay: CAP },
      },
    });
    const base = cluster.process('a').url;

    const replies = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, index) => {
        const { status, body } = await postRun(base, 'ann', `thread-${index}`);
        finished += 1;
        check();
        expect(status).toBe(200);
        return parseSse(body)
          .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
          .map((event) => String(event['delta']))
          .join('');
      }),
    );

    const answered = replies.filter((text) => text === 'Order 7 has shipped.').length;
    expect(answered).toBeGreaterThan(0);
    expect(replies.filter((text) => text === NOTICE)).toHaveLength(CLIENTS - answered);
    // A refused turn made no model call.
    expect(cluster.requests).toHaveLength(answered);
    const store = await cluster.store();
    const user = (await store.users.findByAccount('web', 'api:ann'))!;
    const spent = sumCosts((await store.sessions.listByUser(user.id, 100)).map((session) => session.cost));
    expect(Number(spent)).toBeGreaterThan(0);
    expect(Number(spent)).toBeLessThanOrEqual(Number(CAP));
  }, 120_000);
});
