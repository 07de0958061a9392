import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { events, newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { parseSse } from '../server/sse.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

// A web client that loses its connection mid-turn and retries the same run: the turn goes on without it, and the
// retry gets the reply (attached to the turn still running, or the stored one). Real Palaver, real HTTP.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
let release: (() => void) | undefined;
afterEach(async () => {
  release?.();
  await server?.close();
  await harness?.close();
  harness = server = release = undefined;
});

/** A Palaver whose model holds every answer until `release()`, and reports each call as it arrives. */
async function startHeld(): Promise<{ palaver: Palaver; base: string; modelCalled: Promise<void> }> {
  let called!: () => void;
  const modelCalled = new Promise<void>((resolve) => (called = resolve));
  const held = new Promise<void>((resolve) => (release = resolve));
  harness = await createHarness(async (call) => {
    called();
    await held;
    return { text: `echo: ${userTexts(call).at(-1)}` };
  });
  const palaver = await harness.start({});
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  return { palaver, base: server.url, modelCalled };
}

/** Posts a run and drops the connection once the turn is waiting on the model. */
async function postAndDisconnect(
  base: string,
  input: Record<string, unknown>,
  modelCalled: Promise<void>,
  headers: Record<string, string> = {},
): Promise<void> {
  const abort = new AbortController();
  const response = await fetch(`${base}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(input),
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  await modelCalled;
  abort.abort();
  await response.body?.cancel().catch(() => {});
  // The server has seen the client go.
  await expect.poll(() => harness!.logs.some((line) => line['msg'] === 'client disconnected before the run ended'), { timeout: 5_000 }).toBe(true);
}

describe('web channel: a client that disconnects mid-turn', () => {
  it('does not cancel the turn: a retry of the same run while it runs is attached to it and gets the reply', async () => {
    const { base, modelCalled } = await startHeld();
    const input = runInput('t-drop-1', 'are you still there?');
    await postAndDisconnect(base, input, modelCalled);

    // The retry's response starts (its run is recognised) while the turn still waits on the model.
    const retry = await fetch(`${base}/agui`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    expect(retry.status).toBe(200);
    release!();
    const shown = parseSse(await retry.text());
    expect(
      shown
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('echo: are you still there?');
    expect(shown.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
    // The turn ran once.
    expect(harness!.model.calls).toHaveLength(1);
  });

  it('gives a retry of a run whose first request still looks open the reply, and ends the first request', async () => {
    const { base, modelCalled } = await startHeld();
    const input = runInput('t-drop-0', 'did you get this?');
    // The first request's connection is still open as far as the server can tell (a half-open connection).
    const first = await fetch(`${base}/agui`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    await modelCalled;
    const retry = await fetch(`${base}/agui`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
    expect(retry.status).toBe(200);
    expect(parseSse(await first.text()).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'duplicate' } });
    release!();
    const shown = parseSse(await retry.text());
    expect(
      shown
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('echo: did you get this?');
    expect(shown.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
    expect(harness!.model.calls).toHaveLength(1);
  });

  it('stores the reply of a turn whose client left, and a later retry of the run gets it', async () => {
    const { palaver, base, modelCalled } = await startHeld();
    const input = runInput('t-drop-2', 'tell me later');
    await postAndDisconnect(base, input, modelCalled);
    release!();
    // The turn ends as answered, not cancelled.
    await expect.poll(async () => (await palaver.store.sessions.findByConversation('web', 't-drop-2'))?.status, { timeout: 5_000 }).toBe('completed');

    const retry = await postRun(base, input);
    expect(retry.status).toBe(200);
    expect(shownText(retry)).toBe('echo: tell me later');
    expect(events(retry).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'duplicate', replyStatus: 'completed' } });
    expect(harness!.model.calls).toHaveLength(1);
  });

  it("does not let someone else's retry of the left run read the turn: refused, and the owner's retry still gets the reply", async () => {
    const { base, modelCalled } = await startHeld();
    const owner = await newVisitor(base);
    const other = await newVisitor(base);
    const input = runInput('t-drop-3', 'my private question');
    await postAndDisconnect(base, input, modelCalled, { cookie: owner.cookie });

    const stranger = await postRun(base, input, { cookie: other.cookie });
    expect(stranger.status).toBe(403);
    expect(stranger.body).not.toContain('echo');

    const retry = await fetch(`${base}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: owner.cookie },
      body: JSON.stringify(input),
    });
    expect(retry.status).toBe(200);
    release!();
    const shown = parseSse(await retry.text());
    expect(
      shown
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('echo: my private question');
    expect(harness!.model.calls).toHaveLength(1);
  });
});
