import { Option } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handoffs } from '../../src/admin/api-contract.js';
import { adminCommand } from '../../src/cli/admin.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// The dashboard learns of handoffs from the admin API and its live stream. The handoffs are opened and taken through
// another store on the same SQLite file, as another process would: the Palaver serving the page did none of it.

let harness: Harness | undefined;
let other: Store | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await other?.close();
  await harness?.close();
  harness = other = undefined;
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const bearer = { authorization: `Bearer ${TEST_SECRETS.adminToken}` };

async function start() {
  harness = await createHarness(() => ({ text: 'Noted.' }));
  const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  other = await openStore(harness.databaseUrl);
  /** A conversation on the API channel with a person of this name. */
  const conversation = async (name: string) => {
    await palaver.store.users.resolveAccount({ channel: 'api', accountId: name.toLowerCase(), displayName: name });
    const reply = await palaver.chat({ userId: name.toLowerCase(), text: `I am ${name}` });
    return { sessionId: reply.sessionId, userId: (await palaver.store.sessions.findById(reply.sessionId))!.userId };
  };
  const list = async (query = '') => {
    const response = await fetch(`${server.url}/admin/handoffs${query}`, { headers: bearer });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  return { palaver, server, conversation, list, other };
}

/** The admin event stream, read as it comes: `changes()` counts the `changed` events so far. */
async function events(url: string) {
  const response = await fetch(`${url}/admin/events`, { headers: bearer });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      text += decoder.decode(value);
    }
  })();
  await expect.poll(() => text).toContain('event: ready');
  cleanups.push(() => reader.cancel());
  return { changes: () => text.match(/event: changed/g)?.length ?? 0 };
}

describe('GET /admin/handoffs and the live stream', () => {
  it('lists open handoffs oldest first, and says "changed" when another process opens or takes one', async () => {
    const { server, conversation, list, other } = await start();
    const olena = await conversation('Olena');
    const ivo = await conversation('Ivo');
    expect((await list()).body).toEqual({ handoffs: [], waiting: 0 });

    const stream = await events(server.url);
    const now = Date.now();
    await other.handoffs.open({ sessionId: ivo.sessionId, userId: ivo.userId, reason: 'asked for a person', source: 'phrase', at: now });
    await other.handoffs.open({ sessionId: olena.sessionId, userId: olena.userId, reason: 'refund over the limit', source: 'model', at: now - 60_000 });
    await expect.poll(stream.changes, { timeout: 10_000 }).toBeGreaterThan(0);

    const opened = await list();
    expect(opened.status).toBe(200);
    expect(handoffs.safeParse(opened.body).success).toBe(true);
    expect(opened.body).toEqual({
      handoffs: [
        {
          id: expect.any(String),
          sessionId: olena.sessionId,
          channel: 'api',
          conversationId: 'olena',
          title: 'I am Olena',
          person: { id: olena.userId, name: 'Olena' },
          reason: 'refund over the limit',
          source: 'model',
          requestedAt: new Date(now - 60_000).toISOString(),
          takenBy: null,
          takenAt: null,
          notices: 0,
        },
        expect.objectContaining({ sessionId: ivo.sessionId, person: { id: ivo.userId, name: 'Ivo' }, source: 'phrase', takenBy: null }),
      ],
      waiting: 2,
    });

    const seen = stream.changes();
    await other.handoffs.take(olena.sessionId, 'Dana', now + 1_000);
    await expect.poll(stream.changes, { timeout: 10_000 }).toBeGreaterThan(seen);
    const taken = await list();
    expect(taken.body['waiting']).toBe(1);
    expect(taken.body['handoffs'][0]).toMatchObject({ sessionId: olena.sessionId, takenBy: 'Dana', takenAt: new Date(now + 1_000).toISOString() });

    expect((await list('?limit=1')).body['handoffs']).toHaveLength(1);
    expect((await list('?limit=0')).status).toBe(400);
    expect((await fetch(`${server.url}/admin/handoffs`)).status).toBe(401);
  });

  it('palaver admin handoffs prints who waits and why, or the JSON answer with --json', async () => {
    const { server, conversation, other } = await start();
    const olena = await conversation('Olena');
    await other.handoffs.open({ sessionId: olena.sessionId, userId: olena.userId, reason: 'refund\nover the limit', source: 'model', at: Date.now() });
    vi.stubEnv('PALAVER_ADMIN_TOKEN', TEST_SECRETS.adminToken);
    const printed: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => printed.push(String(chunk)) > 0);
    const run = (...args: string[]) => adminCommand(() => new Option('-c, --config <file>')).parseAsync(['--url', server.url, ...args], { from: 'user' });

    await run('handoffs');
    const table = printed.splice(0).join('');
    expect(table).toMatch(/^SESSION +CHANNEL +PERSON +REASON +SOURCE +REQUESTED +TAKEN BY\n/);
    expect(table).toContain(`${olena.sessionId}  api      Olena   refund over the limit  model`);
    expect(table).toMatch(/\n\n1 waiting for a person\.\n$/);

    await run('--json', 'handoffs');
    expect(JSON.parse(printed.join(''))).toMatchObject({ waiting: 1, handoffs: [{ sessionId: olena.sessionId, reason: 'refund\nover the limit' }] });
  });
});
