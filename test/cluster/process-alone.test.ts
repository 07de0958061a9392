import { afterEach, describe, expect, it, vi } from 'vitest';
import { LocalBus } from '../../src/cluster/local-bus.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

// A Palaver alone on SQLite (cluster.bus "auto" is the local bus there): nobody else could hear a cache change or a
// relayed reply event, so none is encoded and published, from the first turn on (no grace period to wait out).

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await server?.close();
  await harness?.close();
  harness = server = undefined;
});

describe('a process alone on its database', () => {
  it('publishes nothing on its bus while it answers through the API and the web chat', async () => {
    const published = vi.spyOn(LocalBus.prototype, 'publish');
    harness = await createHarness(() => ({ text: 'Answered without telling anyone.' }));
    const palaver = await harness.start();
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });

    expect((await palaver.chat({ userId: 'ada', text: 'hello' })).text).toBe('Answered without telling anyone.');
    const visitor = await newVisitor(server.url);
    const run = await postRun(server.url, runInput('thread-1', 'hello from the page'), { cookie: visitor.cookie });
    expect(run.status).toBe(200);
    expect(shownText(run)).toBe('Answered without telling anyone.');
    // A second turn of the same person: its state and history changed, and still nothing is announced.
    expect((await palaver.chat({ userId: 'ada', text: 'again' })).text).toBe('Answered without telling anyone.');

    expect(published.mock.calls.map(([topic]) => topic)).toEqual([]);
  });
});
