import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { newVisitor, postRun, runInput } from '../security/attack-kit.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

// A chat page holds one `/conversations/events` stream open between runs. A visitor cookie costs nothing, so the
// pages one address may hold are capped as its runs are: past the cap a new one is refused, and one closed frees a place.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
const aborts: AbortController[] = [];
afterEach(async () => {
  for (const abort of aborts.splice(0)) abort.abort();
  await server?.close();
  await harness?.close();
  harness = server = undefined;
});

function open(base: string, threadId: string, cookie: string): Promise<Response> {
  const abort = new AbortController();
  aborts.push(abort);
  return fetch(`${base}/conversations/events?id=${threadId}`, { headers: { cookie }, signal: abort.signal });
}

describe('web channel: open chat pages per address', () => {
  it('refuses a page past channels.web.limits.openPagesPerAddress from one address, and takes one again when another closes', async () => {
    harness = await createHarness(() => ({ text: 'hello' }));
    const palaver = await harness.start({ channels: { web: { limits: { openPagesPerAddress: 2 } } } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const visitors: { cookie: string }[] = [];
    for (const n of [1, 2, 3]) {
      const visitor = await newVisitor(server.url);
      expect((await postRun(server.url, runInput(`t-page-${n}`, 'hi'), { cookie: visitor.cookie })).status).toBe(200);
      visitors.push(visitor);
    }
    expect((await open(server.url, 't-page-1', visitors[0]!.cookie)).status).toBe(200);
    expect((await open(server.url, 't-page-2', visitors[1]!.cookie)).status).toBe(200);
    const refused = await open(server.url, 't-page-3', visitors[2]!.cookie);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('too_many_streams');

    aborts[0]!.abort();
    await expect.poll(async () => (await open(server!.url, 't-page-3', visitors[2]!.cookie)).status, { timeout: 5_000 }).toBe(200);
  });
});
