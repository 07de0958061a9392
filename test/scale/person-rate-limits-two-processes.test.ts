import { afterEach, describe, expect, it } from 'vitest';
import { fullCatalogue } from '../../src/i18n/index.js';
import { parseSse } from '../server/sse.js';
import { startCluster, type ClusterDatabase, type PalaverCluster } from '../support/palaver-cluster.js';

// limits.perPerson across two `palaver start` processes on one PostgreSQL (and MariaDB) database: one person's messages, posted at
// once to both, are answered exactly `messages` times, with one notice, whatever process took them.

const NOTICE = fullCatalogue('en')['limits.perPerson'];
const LIMIT = 3;
const CLIENTS = 12;

let cluster: PalaverCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function postRun(base: string, userId: string, threadId: string): Promise<string> {
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
  expect(response.status).toBe(200);
  return parseSse(await response.text())
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map((event) => String(event['delta']))
    .join('');
}

async function rateLimitedTotal(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith('palaver_rate_limited_total{channel="web"}'));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe.each<ClusterDatabase>(['postgres', 'mariadb'])('rate limits per person on two processes on %s', (database) => {
  it(`answers exactly ${LIMIT} of ${CLIENTS} messages sent at once to both, with one notice, and no model call for the rest`, async () => {
    cluster = await startCluster({
      database,
      processes: ['a', 'b'],
      script: () => ({ text: 'Order 7 has shipped.' }),
      config: { limits: { perPerson: { messages: LIMIT, per: 'hour' } } },
    });
    const bases = [cluster.process('a').url, cluster.process('b').url];
    const replies = await Promise.all(Array.from({ length: CLIENTS }, (_, index) => postRun(bases[index % 2]!, 'ann', `thread-${index}`)));

    expect(replies.filter((text) => text === 'Order 7 has shipped.')).toHaveLength(LIMIT);
    expect(replies.filter((text) => text === NOTICE)).toHaveLength(1);
    expect(replies.filter((text) => text === '')).toHaveLength(CLIENTS - LIMIT - 1);
    expect(cluster.requests).toHaveLength(LIMIT);
    const counted = (await rateLimitedTotal(bases[0]!)) + (await rateLimitedTotal(bases[1]!));
    expect(counted).toBe(CLIENTS - LIMIT);
    // Every message is stored, answered or not.
    const store = await cluster.store();
    const user = (await store.users.findByAccount('web', 'api:ann'))!;
    const sessions = await store.sessions.listByUser(user.id, 100);
    expect(sessions).toHaveLength(CLIENTS);
  }, 120_000);
});
