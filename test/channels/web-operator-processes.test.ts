import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { LocalBus } from '../../src/cluster/local-bus.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { events, newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Two Palaver processes (two instances here) on one PostgreSQL database and one bus, each on its own port: the
// visitor's page is open on A, the operator's request reaches B.

let harness: Harness | undefined;
let database: TestPostgresDatabase | undefined;
let bus: LocalBus | undefined;
const servers: RunningHttpServer[] = [];
const aborts: AbortController[] = [];
afterEach(async () => {
  for (const abort of aborts.splice(0)) abort.abort();
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await harness?.close();
  await bus?.close();
  await database?.drop();
  harness = database = bus = undefined;
});

async function startCluster(): Promise<{ a: string; b: string; palaver: Palaver }> {
  database = await createTestPostgresDatabase();
  bus = new LocalBus();
  harness = await createHarness((call) => ({ text: `echo: ${userTexts(call).at(-1)}` }));
  const start = async () => {
    const palaver = await harness!.start({ database: { url: database!.url }, server: { adminToken: TEST_SECRETS.adminToken } }, { bus });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    servers.push(server);
    return { palaver, base: server.url };
  };
  const a = await start();
  const b = await start();
  return { a: a.base, b: b.base, palaver: a.palaver };
}

/** The page's events stream, read as it arrives: `next(type)` waits for the next event of that type. */
async function watch(base: string, threadId: string, cookie: string) {
  const abort = new AbortController();
  aborts.push(abort);
  const response = await fetch(`${base}/conversations/events?id=${encodeURIComponent(threadId)}`, { headers: { cookie }, signal: abort.signal });
  expect(response.status).toBe(200);
  const seen: Array<Record<string, unknown>> = [];
  let waiting: (() => void) | undefined;
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith('data: ')) seen.push(JSON.parse(block.slice(6)) as Record<string, unknown>);
        }
        waiting?.();
      }
    } catch {
      // aborted at the end of the test
    }
  })();
  let read = 0;
  return {
    async next(type: string): Promise<Record<string, unknown>> {
      for (;;) {
        const index = seen.findIndex((event, i) => i >= read && event['type'] === type);
        if (index !== -1) {
          read = index + 1;
          return seen[index]!;
        }
        // The next chunk, or a look again after a while; the test's own timeout bounds the wait.
        await new Promise<void>((resolve) => {
          waiting = resolve;
          setTimeout(resolve, 1_000).unref();
        });
      }
    },
  };
}

async function admin(base: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${base}/admin${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

describe('an operator steps in with two processes on one database', () => {
  it("shows B's operator on A's open page: the pause, the message as a person's, the held message's reply on resume", async () => {
    const { a, b, palaver } = await startCluster();
    const visitor = await newVisitor(a);
    const first = await postRun(a, runInput('t-op-1', 'where is my refund?'), { cookie: visitor.cookie });
    expect(shownText(first)).toBe('echo: where is my refund?');
    const session = await palaver.store.sessions.findByConversation('web', 't-op-1');
    const page = await watch(a, 't-op-1', visitor.cookie);
    expect(await page.next('state')).toEqual({ type: 'state', paused: false });

    expect((await admin(b, `/conversations/${session!.id}/pause`)).status).toBe(200);
    expect(await page.next('paused')).toEqual({ type: 'paused', paused: true });
    const text = '<script>alert(1)</script> Your refund left today.';
    const sent = await admin(b, `/conversations/${session!.id}/messages`, { text });
    expect(sent.status).toBe(202);
    const { messageId } = (await sent.json()) as { messageId: string };
    expect(await page.next('operator_message')).toEqual({ type: 'operator_message', id: messageId, text, author: 'Support team', at: expect.any(String) });

    // While paused, the person's message on A is stored and held: the run ends as held, the model is not asked.
    const calls = harness!.model.calls.length;
    const held = await postRun(a, runInput('t-op-1', 'is it today?'), { cookie: visitor.cookie });
    expect(events(held).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'held' } });
    expect(shownText(held)).toBe('');

    // The transcript (a reload, on either process) names the operator and says the conversation is paused.
    const transcript = (await (await fetch(`${b}/conversations/messages?id=t-op-1`, { headers: { cookie: visitor.cookie } })).json()) as {
      paused: boolean;
      messages: Array<{ text: string; author?: string; role: string }>;
    };
    expect(transcript.paused).toBe(true);
    expect(transcript.messages.map((m) => [m.role, m.text, m.author])).toEqual([
      ['user', 'where is my refund?', undefined],
      ['assistant', 'echo: where is my refund?', undefined],
      ['assistant', text, 'Support team'],
      ['user', 'is it today?', undefined],
    ]);

    // Resumed on B: the held message is answered once, and A's page shows the reply no run of it carried.
    expect((await admin(b, `/conversations/${session!.id}/resume`)).status).toBe(200);
    expect(await page.next('paused')).toEqual({ type: 'paused', paused: false });
    expect(await page.next('reply')).toMatchObject({ type: 'reply', text: 'echo: is it today?' });
    expect(harness!.model.calls.length).toBe(calls + 1);
  });

  it("refuses another visitor the conversation's events (403), on either process", async () => {
    const { a, b } = await startCluster();
    const owner = await newVisitor(a);
    const other = await newVisitor(b);
    await postRun(a, runInput('t-op-2', 'private'), { cookie: owner.cookie });
    for (const base of [a, b]) {
      const response = await fetch(`${base}/conversations/events?id=t-op-2`, { headers: { cookie: other.cookie } });
      expect(response.status).toBe(403);
    }
    expect((await fetch(`${a}/conversations/events?id=t-op-none`, { headers: { cookie: owner.cookie } })).status).toBe(404);
  });
});
