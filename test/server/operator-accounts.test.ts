import { afterEach, describe, expect, it } from 'vitest';
import { adminActions, adminMe, issuedOperatorToken, operatorAccounts } from '../../src/admin/api-contract.js';
import { startCluster, type PalaverCluster } from '../support/palaver-cluster.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { registerRunSecrets } from '../support/run-log.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Operators are people: each signs in with a token of their own, the audit names who acted from that token (never
// from a header), a role decides what they may do, and a disabled account stops at once.

let harness: Harness | undefined;
let cluster: PalaverCluster | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await harness?.close();
  await cluster?.close();
  harness = cluster = undefined;
});

const ADMIN = TEST_SECRETS.adminToken;

/** A Palaver on a real SQLite file serving the admin API and dashboard over real HTTP, with one conversation in it. */
async function start() {
  harness = await createHarness(() => ({ text: 'Hello.' }));
  const palaver = await harness.start({ server: { adminToken: ADMIN }, roles: { definitions: { driver: { tools: [] } } } });
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  const base = server.url;
  const call = async (token: string | undefined, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/admin${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
  };
  /** Adds an operator with the admin token; answers their id and token. */
  const addOperator = async (name: string, role?: 'operator' | 'admin') => {
    const added = await call(ADMIN, 'POST', '/operators', { name, ...(role ? { role } : {}) });
    expect(added.status).toBe(201);
    const { operator, token } = issuedOperatorToken.parse(added.body);
    // The run fails if any log line of any test holds it.
    registerRunSecrets([token]);
    return { id: operator.id, token };
  };
  const signIn = async (token: string) => {
    const response = await fetch(`${base}/admin/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ token }),
    });
    const body = (await response.json()) as Record<string, any>;
    return { status: response.status, cookie: (response.headers.get('set-cookie') ?? '').split(';')[0]!, csrf: body['csrfToken'] as string };
  };
  /** A request as the dashboard page makes it: the session cookie, and on a write its CSRF token and Origin. */
  const asPage = async (session: { cookie: string; csrf: string }, method: string, path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/admin${path}`, {
      method,
      headers: {
        cookie: session.cookie,
        ...(method === 'GET' ? {} : { 'x-csrf-token': session.csrf, origin: base, 'content-type': 'application/json' }),
        ...headers,
      },
      ...(method === 'GET' ? {} : { body: '{}' }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const signedIn = async (cookie: string) => ((await (await fetch(`${base}/admin/session`, { headers: { cookie } })).json()) as { signedIn: boolean }).signedIn;
  const { sessionId, userId } = await conversation(palaver);
  return { palaver, call, addOperator, signIn, asPage, signedIn, sessionId, userId };
}

async function conversation(palaver: Awaited<ReturnType<Harness['start']>>) {
  const reply = await palaver.chat({ userId: 'alice', text: 'hello' });
  const session = await palaver.store.sessions.findById(reply.sessionId);
  return { sessionId: reply.sessionId, userId: session!.userId };
}

describe('operator accounts', () => {
  it('names each of two operators in the audit by their own account, whatever X-Palaver-Actor claims', async () => {
    const { call, addOperator, sessionId } = await start();
    const olena = await addOperator('Olena');
    const taras = await addOperator('Taras');

    expect(adminMe.parse((await call(olena.token, 'GET', '/me')).body)).toEqual({ actor: 'Olena', role: 'operator', operatorId: olena.id });
    expect((await call(ADMIN, 'GET', '/me', undefined, { 'x-palaver-actor': 'Ops Anna' })).body).toEqual({
      actor: 'Ops Anna',
      role: 'admin',
      operatorId: null,
    });

    expect((await call(olena.token, 'POST', `/conversations/${sessionId}/pause`, {}, { 'x-request-id': 'req-olena' })).status).toBe(200);
    // Taras says he is Olena: the server knows his token, and records him.
    expect((await call(taras.token, 'POST', `/conversations/${sessionId}/resume`, {}, { 'x-palaver-actor': 'Olena' })).status).toBe(200);
    expect((await call(taras.token, 'POST', `/conversations/${sessionId}/messages`, { text: 'A person here.' })).status).toBe(202);
    // A script with the admin token still names its operator as before: a claim, kept without an account.
    expect((await call(ADMIN, 'POST', `/conversations/${sessionId}/end`, {}, { 'x-palaver-actor': 'Ops Anna' })).status).toBe(200);

    const audit = adminActions.parse((await call(olena.token, 'GET', '/actions?limit=20')).body).actions;
    const inConversation = audit.filter((action) => action.sessionId === sessionId).reverse();
    expect(inConversation.map(({ action, actor, operatorId }) => ({ action, actor, operatorId }))).toEqual([
      { action: 'pause', actor: 'Olena', operatorId: olena.id },
      { action: 'resume', actor: 'Taras', operatorId: taras.id },
      { action: 'send', actor: 'Taras', operatorId: taras.id },
      { action: 'end', actor: 'Ops Anna', operatorId: null },
    ]);
    expect(inConversation[0]!.requestId).toBe('req-olena');
    // The accounts were made by the admin token, and say so.
    expect(audit.filter((action) => action.action === 'operator_add').map((action) => [action.actor, action.details['name']])).toEqual([
      ['admin', 'Taras'],
      ['admin', 'Olena'],
    ]);
  });

  it("refuses an operator the admins' routes with 403 forbidden, and lets an admin account manage operators", async () => {
    const { call, addOperator, sessionId, userId } = await start();
    const olena = await addOperator('Olena');
    for (const path of ['/users', `/users/${userId}`, `/users/${userId}/events`, '/conversations', `/conversations/${sessionId}`, '/turns/live', '/actions'])
      expect({ path, status: (await call(olena.token, 'GET', path)).status }).toEqual({ path, status: 200 });
    expect((await call(olena.token, 'GET', `/conversations/${sessionId}/transcript`)).status).toBe(200);

    const refused = [
      ['PUT', `/users/${userId}/role`, { role: 'driver' }],
      ['PUT', `/users/${userId}/phone`, { phone: '+380671234567' }],
      ['PATCH', `/users/${userId}/profile`, { preferences: { country: 'UA' } }],
      ['PUT', `/users/${userId}/flows/documents`, { state: { step: 1 } }],
      ['POST', '/relink', { channel: 'api', accountId: 'alice', toUserId: userId }],
      ['GET', '/operators', undefined],
      ['POST', '/operators', { name: 'Mallory', role: 'admin' }],
      ['GET', '/costs', undefined],
      ['GET', '/overview', undefined],
    ] as const;
    for (const [method, path, body] of refused) {
      const answer = await call(olena.token, method, path, body);
      expect({ method, path, status: answer.status, code: answer.body['error']?.['code'] }).toEqual({ method, path, status: 403, code: 'forbidden' });
      expect(answer.body['error']['message']).toContain('Olena signs in as an operator');
    }
    expect((await call(ADMIN, 'GET', `/users/${userId}`)).body['role']).toBeNull();
    expect(operatorAccounts.parse((await call(ADMIN, 'GET', '/operators')).body).operators.map((operator) => operator.name)).toEqual(['Olena']);

    // An admin account may: it adds an operator, and the audit names it.
    const lead = await addOperator('Lead', 'admin');
    expect((await call(lead.token, 'PUT', `/users/${userId}/role`, { role: 'driver' })).status).toBe(200);
    const made = await call(lead.token, 'POST', '/operators', { name: 'Ivo' });
    expect(made.status).toBe(201);
    expect(made.headers.get('cache-control')).toBe('no-store');
    const audit = adminActions.parse((await call(ADMIN, 'GET', '/actions')).body).actions;
    expect(audit.find((action) => action.action === 'operator_add' && action.details['name'] === 'Ivo')).toMatchObject({ actor: 'Lead', operatorId: lead.id });
    expect(audit.find((action) => action.action === 'role')).toMatchObject({ actor: 'Lead', operatorId: lead.id, userId });
  });

  it('issues tokens once, keeps only their digests, and refuses a name taken in any case and the name admin', async () => {
    const { palaver, call, addOperator } = await start();
    const olena = await addOperator('Olena');
    expect(olena.token).toMatch(/^pvo_[A-Za-z0-9_-]{43}$/);
    const again = await call(ADMIN, 'POST', '/operators', { name: 'OLENA' });
    expect(again.status).toBe(409);
    expect(again.body['error']['code']).toBe('conflict');
    expect((await call(ADMIN, 'POST', '/operators', { name: 'Admin' })).status).toBe(400);
    expect((await call(ADMIN, 'POST', '/operators', { name: 'x', role: 'owner' })).status).toBe(400);
    expect((await call(ADMIN, 'POST', '/operators', { name: "Robert'); DROP TABLE operators;--" })).status).toBe(400);

    const listed = await call(ADMIN, 'GET', '/operators');
    expect(listed.body).toEqual({ operators: [{ id: olena.id, name: 'Olena', role: 'operator', createdAt: expect.any(String), disabledAt: null }] });
    expect(JSON.stringify(listed.body)).not.toContain(olena.token);
    const stored = await palaver.store.operatorAccounts.list();
    expect(JSON.stringify(stored)).not.toContain(olena.token);

    const reissued = await call(ADMIN, 'POST', `/operators/${olena.id}/reset-token`);
    expect(reissued.status).toBe(200);
    const fresh = issuedOperatorToken.parse(reissued.body).token;
    registerRunSecrets([fresh]);
    expect(fresh).not.toBe(olena.token);
    expect((await call(olena.token, 'GET', '/me')).status).toBe(401);
    expect((await call(fresh, 'GET', '/me')).body['actor']).toBe('Olena');
    expect((await call(ADMIN, 'POST', '/operators/no-such-operator/disable')).status).toBe(404);
  });

  it("stops a disabled operator's token and dashboard session at once, and no one else's", async () => {
    const { call, addOperator, signIn, asPage, signedIn, sessionId } = await start();
    const olena = await addOperator('Olena');
    const taras = await addOperator('Taras');
    const olenaPage = await signIn(olena.token);
    const tarasPage = await signIn(taras.token);
    expect(olenaPage.status).toBe(200);

    // The page's writes are the operator's, whatever name the page sends.
    expect((await asPage(olenaPage, 'POST', `/conversations/${sessionId}/pause`, { 'x-palaver-actor': 'dashboard' })).status).toBe(200);
    expect((await asPage(olenaPage, 'GET', '/me')).body).toEqual({ actor: 'Olena', role: 'operator', operatorId: olena.id });
    expect((await asPage(olenaPage, 'GET', '/costs')).status).toBe(403);

    const disabled = await call(ADMIN, 'POST', `/operators/${olena.id}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body['operator']).toMatchObject({ id: olena.id, disabledAt: expect.any(String) });
    expect((await call(olena.token, 'GET', '/conversations')).status).toBe(401);
    expect((await asPage(olenaPage, 'GET', '/conversations')).status).toBe(401);
    expect((await asPage(olenaPage, 'POST', `/conversations/${sessionId}/resume`)).status).toBe(401);
    expect(await signedIn(olenaPage.cookie)).toBe(false);
    expect((await signIn(olena.token)).status).toBe(401);
    // A disabled account gets no new token.
    expect((await call(ADMIN, 'POST', `/operators/${olena.id}/reset-token`)).status).toBe(409);

    expect((await call(taras.token, 'GET', '/conversations')).status).toBe(200);
    expect((await asPage(tarasPage, 'POST', `/conversations/${sessionId}/resume`)).status).toBe(200);
    expect(await signedIn(tarasPage.cookie)).toBe(true);

    const audit = adminActions.parse((await call(ADMIN, 'GET', '/actions')).body).actions;
    expect(audit.find((action) => action.action === 'operator_disable')).toMatchObject({
      actor: 'admin',
      details: { operatorId: olena.id, name: 'Olena', changed: true, signedOut: 1 },
    });
    const pause = audit.find((action) => action.action === 'pause' && action.sessionId === sessionId);
    expect(pause).toMatchObject({ actor: 'Olena', operatorId: olena.id });
  });

  it('counts a wrong or disabled token on the sign-in form and as a bearer token, then turns away even a good one', async () => {
    const { call, addOperator, signIn } = await start();
    const olena = await addOperator('Olena');
    const gone = await addOperator('Gone');
    expect((await call(ADMIN, 'POST', `/operators/${gone.id}/disable`)).status).toBe(200);

    // Five failures per address in 15 minutes: a made-up operator token, a disabled one, twice each way, and one more.
    expect((await signIn(`pvo_${'A'.repeat(43)}`)).status).toBe(401);
    expect((await signIn(gone.token)).status).toBe(401);
    expect((await call(`pvo_${'B'.repeat(43)}`, 'GET', '/me')).status).toBe(401);
    expect((await call(gone.token, 'GET', '/me')).status).toBe(401);
    expect((await signIn('not-a-token-at-all-really')).status).toBe(401);
    expect((await signIn(olena.token)).status).toBe(429);
    const locked = await call(olena.token, 'GET', '/me');
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('stops a disabled operator on every process of one PostgreSQL database at once', { timeout: 120_000 }, async () => {
    cluster = await startCluster({ database: 'postgres', script: () => ({ text: 'hi' }), config: { server: { adminToken: ADMIN } } });
    const [a, b] = [cluster.process('a').url, cluster.process('b').url];
    const request = (base: string, path: string, init: { method?: string; token?: string; cookie?: string; body?: unknown } = {}) =>
      fetch(`${base}/admin${path}`, {
        method: init.method ?? 'GET',
        headers: {
          'content-type': 'application/json',
          origin: base,
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...(init.cookie ? { cookie: init.cookie } : {}),
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
    const added = issuedOperatorToken.parse(await (await request(a, '/operators', { method: 'POST', token: ADMIN, body: { name: 'Olena' } })).json());
    registerRunSecrets([added.token]);
    const signIn = await request(b, '/session', { method: 'POST', body: { token: added.token } });
    expect(signIn.status).toBe(200);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect((await request(b, '/me', { cookie })).status).toBe(200);
    expect((await request(b, '/me', { token: added.token })).status).toBe(200);

    expect((await request(a, `/operators/${added.operator.id}/disable`, { method: 'POST', token: ADMIN })).status).toBe(200);
    expect((await request(b, '/me', { token: added.token })).status).toBe(401);
    expect((await request(b, '/me', { cookie })).status).toBe(401);
  });
});
