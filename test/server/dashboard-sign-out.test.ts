import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { startCluster, type PalaverCluster } from '../support/palaver-cluster.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Sign-out must hold wherever the cookie is shown next: after a restart, and on any other process of the database.

const TOKEN = TEST_SECRETS.adminToken;

async function signIn(base: string): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${base}/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ token: TOKEN }),
  });
  expect(response.status).toBe(200);
  const { csrfToken } = (await response.json()) as { csrfToken: string };
  return { cookie: (response.headers.get('set-cookie') ?? '').split(';')[0]!, csrf: csrfToken };
}

async function signOut(base: string, session: { cookie: string; csrf: string }): Promise<void> {
  const response = await fetch(`${base}/admin/session`, { method: 'DELETE', headers: { cookie: session.cookie, origin: base, 'x-csrf-token': session.csrf } });
  expect(response.status).toBe(204);
}

/** What a page with this cookie gets from a data route, and whether `/admin/session` says it is signed in. */
async function seenAs(base: string, cookie: string): Promise<{ status: number; signedIn: boolean }> {
  const data = await fetch(`${base}/admin/conversations?limit=1`, { headers: { cookie } });
  await data.body?.cancel();
  const session = (await (await fetch(`${base}/admin/session`, { headers: { cookie } })).json()) as { signedIn: boolean };
  return { status: data.status, signedIn: session.signedIn };
}

describe('dashboard sign-out', () => {
  let harness: Harness | undefined;
  let cluster: PalaverCluster | undefined;
  const servers: RunningHttpServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    await harness?.close();
    await cluster?.close();
    harness = cluster = undefined;
  });

  it('survives a restart on the same SQLite file, while a session not signed out still works', async () => {
    harness = await createHarness(() => ({ text: 'hi' }));
    const config = { server: { adminToken: TOKEN } };
    let palaver = await harness.start(config);
    let server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const out = await signIn(server.url);
    const kept = await signIn(server.url);
    await signOut(server.url, out);
    expect(await seenAs(server.url, out.cookie)).toEqual({ status: 401, signedIn: false });
    await server.close();
    await palaver.close();

    palaver = await harness.start(config);
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    servers.push(server);
    expect(await seenAs(server.url, out.cookie)).toEqual({ status: 401, signedIn: false });
    expect(await seenAs(server.url, kept.cookie)).toEqual({ status: 200, signedIn: true });
  });

  it('reaches every process on one PostgreSQL database', { timeout: 120_000 }, async () => {
    cluster = await startCluster({ database: 'postgres', script: () => ({ text: 'hi' }), config: { server: { adminToken: TOKEN } } });
    const [a, b] = [cluster.process('a').url, cluster.process('b').url];
    const session = await signIn(a);
    expect(await seenAs(b, session.cookie)).toEqual({ status: 200, signedIn: true });
    await signOut(a, session);
    expect(await seenAs(b, session.cookie)).toEqual({ status: 401, signedIn: false });
    expect(await seenAs(a, session.cookie)).toEqual({ status: 401, signedIn: false });
  });
});
