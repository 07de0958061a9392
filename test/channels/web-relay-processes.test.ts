import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { LocalBus } from '../../src/cluster/local-bus.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { events, newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { parseSse } from '../server/sse.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// Two Palaver processes (two instances in this test process) on one PostgreSQL database and one bus, each serving
// its own HTTP port, as two processes behind a load balancer: a web run reaches one, the turn runs on the other.

let harness: Harness | undefined;
let database: TestPostgresDatabase | undefined;
let bus: LocalBus | undefined;
const servers: RunningHttpServer[] = [];
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await harness?.close();
  await bus?.close();
  await database?.drop();
  harness = database = bus = release = undefined;
});

interface Cluster {
  readonly a: { palaver: Palaver; base: string };
  readonly b: { palaver: Palaver; base: string };
  readonly modelCalled: Promise<void>;
}

/** Two Palavers on one database and one bus; the model holds every answer until `release()`. */
async function startCluster(): Promise<Cluster> {
  let called!: () => void;
  const modelCalled = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  database = await createTestPostgresDatabase();
  bus = new LocalBus();
  harness = await createHarness(async (call) => {
    called();
    await held;
    return { text: `echo: ${userTexts(call).at(-1)} and some more words to stream` };
  });
  const start = async () => {
    const palaver = await harness!.start({ database: { url: database!.url } }, { bus });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    servers.push(server);
    return { palaver, base: server.url };
  };
  const a = await start();
  const b = await start();
  return { a, b, modelCalled };
}

function open(base: string, input: Record<string, unknown>, headers: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${base}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(input),
    ...(signal ? { signal } : {}),
  });
}

/** Posts a run to `base`, and drops the connection once its turn waits on the model. */
async function postAndLeave(base: string, input: Record<string, unknown>, headers: Record<string, string>, modelCalled: Promise<void>): Promise<void> {
  const abort = new AbortController();
  const response = await open(base, input, headers, abort.signal);
  expect(response.status).toBe(200);
  await modelCalled;
  abort.abort();
  await response.body?.cancel().catch(() => {});
  await expect.poll(() => harness!.logs.some((line) => line['msg'] === 'client disconnected before the run ended'), { timeout: 5_000 }).toBe(true);
}

const deltas = (list: Array<Record<string, unknown> & { type: string }>) =>
  list.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => String(e['delta']));

describe('web chat with two processes on one database and one bus', () => {
  it("streams A's turn to a run retried on B: the text as it is written, then the reply, once", async () => {
    const { a, b, modelCalled } = await startCluster();
    const visitor = await newVisitor(a.base);
    const input = runInput('t-relay-1', 'where is my parcel?');
    await postAndLeave(a.base, input, { cookie: visitor.cookie }, modelCalled);

    // The client comes back through the load balancer, which sends it to B; the turn still runs on A.
    const retry = await open(b.base, input, { cookie: visitor.cookie });
    expect(retry.status).toBe(200);
    release!();
    const shown = parseSse(await retry.text());
    const text = deltas(shown);
    expect(text.join('')).toBe('echo: where is my parcel? and some more words to stream');
    // Streamed (several deltas), not a stored reply replayed in one piece.
    expect(text.length).toBeGreaterThan(1);
    expect(shown.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
    expect(harness!.model.calls).toHaveLength(1);
  });

  it("moves a run whose client is still connected to A over to B when the client retries there; A's stream ends", async () => {
    const { a, b, modelCalled } = await startCluster();
    const visitor = await newVisitor(a.base);
    const input = runInput('t-relay-2', 'are you there?');
    const first = await open(a.base, input, { cookie: visitor.cookie });
    await modelCalled;

    const retry = await open(b.base, input, { cookie: visitor.cookie });
    expect(retry.status).toBe(200);
    // A's stream of the run ends without the reply: the newer request on B carries it.
    const firstShown = parseSse(await first.text());
    expect(firstShown.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'duplicate' } });
    expect(deltas(firstShown)).toEqual([]);
    release!();
    const shown = parseSse(await retry.text());
    expect(deltas(shown).join('')).toBe('echo: are you there? and some more words to stream');
    expect(shown.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
  });

  it('gives a run retried on B after the turn finished on A the stored reply', async () => {
    const { a, b } = await startCluster();
    release!();
    const visitor = await newVisitor(a.base);
    const input = runInput('t-relay-3', 'hello');
    const first = await postRun(a.base, input, { cookie: visitor.cookie });
    expect(shownText(first)).toBe('echo: hello and some more words to stream');

    const retry = await postRun(b.base, input, { cookie: visitor.cookie });
    expect(retry.status).toBe(200);
    expect(shownText(retry)).toBe('echo: hello and some more words to stream');
    expect(events(retry).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'duplicate', replyStatus: 'completed' } });
    expect(harness!.model.calls).toHaveLength(1);
  });

  it("never shows A's turn to another visitor: the same run id is refused, and their own run on B sees only its reply", async () => {
    const { a, b, modelCalled } = await startCluster();
    const owner = await newVisitor(a.base);
    const other = await newVisitor(b.base);
    const input = runInput('t-relay-4', 'my private question');
    await postAndLeave(a.base, input, { cookie: owner.cookie }, modelCalled);

    // Someone else presents the owner's thread and run id on B: refused before any stream starts.
    const stranger = await postRun(b.base, input, { cookie: other.cookie });
    expect(stranger.status).toBe(403);
    expect(stranger.body).not.toContain('private');
    // The other visitor's own conversation on B, open while A's turn streams, with the same run id.
    const theirs = await open(
      b.base,
      { ...input, threadId: 't-relay-4-other', messages: [{ id: 'm-x', role: 'user', content: 'mine' }] },
      { cookie: other.cookie },
    );
    expect(theirs.status).toBe(200);
    const retry = await open(b.base, input, { cookie: owner.cookie });
    release!();
    expect(deltas(parseSse(await retry.text())).join('')).toBe('echo: my private question and some more words to stream');
    const theirsShown = parseSse(await theirs.text());
    expect(JSON.stringify(theirsShown)).not.toContain('private');
    expect(deltas(theirsShown).join('')).toBe('echo: mine and some more words to stream');
  });
});
