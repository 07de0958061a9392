import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type DashboardOptions, type RunningHttpServer } from '../../src/server/index.js';
import { DashboardSessions } from '../../src/admin/dashboard-session.js';
import { MemoryDashboardSessions } from '../../src/admin/memory-dashboard-sessions.js';
import type { NewDashboardSession } from '../../src/domain/ports/store.js';
import { TEST_SECRETS } from '../support/secrets.js';

const TOKEN = TEST_SECRETS.adminToken;
const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A server with the dashboard and one admin route to read and one to write, as the admin API's would be. */
async function serve(options: { adminToken?: string; dashboard?: DashboardOptions | false; routes?: WebChannel['routes']; trustedProxies?: string[] } = {}) {
  const writes: string[] = [];
  const app = createHttpApp({
    health: async () => ({}),
    logger: silentLogger(),
    adminToken: 'adminToken' in options ? options.adminToken : TOKEN,
    routes: options.routes ?? [],
    ...(options.dashboard === undefined ? {} : { dashboard: options.dashboard }),
    ...(options.trustedProxies ? { trustedProxies: options.trustedProxies } : {}),
    extraRoutes: (http) => {
      http.get('/admin/things', (c) => c.json({ things: ['a'] }));
      http.post('/admin/things', (c) => {
        writes.push('thing');
        return c.json({ ok: true });
      });
    },
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  servers.push(server);
  const origin = server.url;
  const call = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    fetch(`${server.url}${path}`, { method, headers, redirect: 'manual', ...(body === undefined ? {} : { body }) });
  const signIn = async (token: string = TOKEN, headers: Record<string, string> = {}) => {
    const response = await call('POST', '/admin/session', { 'content-type': 'application/json', origin, ...headers }, JSON.stringify({ token }));
    const setCookie = response.headers.get('set-cookie') ?? '';
    const body = (await response.json()) as Record<string, any>;
    return { response, setCookie, cookie: setCookie.split(';')[0] ?? '', csrf: body['csrfToken'] as string | undefined, body };
  };
  return { server, origin, call, signIn, writes };
}

describe('dashboard sign-in', () => {
  it('serves the page and its chart library to anyone, but no data without a sign-in', async () => {
    const { call } = await serve();
    const page = await call('GET', '/admin');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('/admin/assets/admin.js');
    const chart = await call('GET', '/admin/assets/chart.umd.min.js');
    expect(chart.status).toBe(200);
    expect(await chart.text()).toContain('Chart');
    expect((await call('GET', '/admin/assets/nothing.js')).status).toBe(404);
    expect((await call('GET', '/admin/things')).status).toBe(401);
    expect(await (await call('GET', '/admin/session')).json()).toEqual({ signedIn: false });
  });

  it('refuses a wrong token and signs in with the right one: an HttpOnly, SameSite=Strict cookie on /admin without the token in it', async () => {
    const { call, signIn } = await serve();
    const wrong = await signIn('not-the-admin-token-at-all');
    expect(wrong.response.status).toBe(401);
    expect(wrong.setCookie).toBe('');

    const right = await signIn();
    expect(right.response.status).toBe(200);
    expect(right.csrf).toMatch(/^[\w-]{43}$/);
    expect(right.setCookie).toMatch(/^palaver_admin=v1\.\d+\.[\w-]+\.[\w-]{43}; Max-Age=43200; Path=\/admin; HttpOnly; SameSite=Strict$/);
    expect(right.setCookie).not.toContain(TOKEN);
    const things = await call('GET', '/admin/things', { cookie: right.cookie });
    expect(things.status).toBe(200);
    expect(await things.json()).toEqual({ things: ['a'] });
    // A reloaded page asks for its CSRF token again: the same one, bound to this session.
    const session = await call('GET', '/admin/session', { cookie: right.cookie });
    expect(await session.json()).toEqual({ signedIn: true, csrfToken: right.csrf, expiresAt: expect.any(String) });
    // A forged or altered cookie is nobody.
    const altered = right.cookie.replace(/\.(\d+)\./, (_m, seconds: string) => `.${Number(seconds) + 3600}.`);
    expect((await call('GET', '/admin/things', { cookie: altered })).status).toBe(401);
  });

  it('marks the cookie Secure when the browser came over HTTPS', async () => {
    const { signIn } = await serve();
    const { setCookie } = await signIn(TOKEN, { 'x-forwarded-proto': 'https' });
    expect(setCookie).toContain('; Secure');
  });

  it("signs in from a form with a redirect to the page, but not from another site's form", async () => {
    const { call, origin } = await serve();
    const form = await call(
      'POST',
      '/admin/session',
      { 'content-type': 'application/x-www-form-urlencoded', origin },
      new URLSearchParams({ token: TOKEN }).toString(),
    );
    expect(form.status).toBe(303);
    expect(form.headers.get('location')).toBe('/admin');
    expect(form.headers.get('set-cookie')).toMatch(/^palaver_admin=/);
    const foreign = await call(
      'POST',
      '/admin/session',
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      new URLSearchParams({ token: TOKEN }).toString(),
    );
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('set-cookie')).toBeNull();
  });

  it("lets a cookie write only with the session's CSRF token and this server's Origin", async () => {
    const { call, signIn, origin, writes } = await serve();
    const { cookie, csrf } = await signIn();
    const other = await signIn();
    const post = (headers: Record<string, string>) => call('POST', '/admin/things', { cookie, 'content-type': 'application/json', ...headers }, '{}');

    expect((await post({ origin })).status).toBe(403);
    expect((await post({ origin, 'x-csrf-token': 'x'.repeat(43) })).status).toBe(403);
    expect((await post({ origin, 'x-csrf-token': other.csrf! })).status).toBe(403);
    expect((await post({ 'x-csrf-token': csrf! })).status).toBe(403);
    expect((await post({ origin: 'https://evil.example', 'x-csrf-token': csrf! })).status).toBe(403);
    expect((await post({ origin: origin.replace(/:\d+$/, ':1'), 'x-csrf-token': csrf! })).status).toBe(403);
    expect(writes).toEqual([]);

    const ok = await post({ origin, 'x-csrf-token': csrf! });
    expect(ok.status).toBe(200);
    expect(writes).toEqual(['thing']);
  });

  it('keeps the admin API working with the bearer token alone, reads and writes, no CSRF token needed', async () => {
    const { call, writes } = await serve();
    const bearer = { authorization: `Bearer ${TOKEN}` };
    expect((await call('GET', '/admin/things', bearer)).status).toBe(200);
    expect((await call('POST', '/admin/things', { ...bearer, 'content-type': 'application/json' }, '{}')).status).toBe(200);
    expect(writes).toEqual(['thing']);
    expect((await call('GET', '/admin/things', { authorization: 'Bearer wrong-wrong-wrong-wrong' })).status).toBe(401);
  });

  it('does not let a valid cookie rescue a wrong bearer token', async () => {
    const { call, signIn } = await serve();
    const { cookie } = await signIn();
    expect((await call('GET', '/admin/things', { cookie, authorization: 'Bearer wrong-wrong-wrong-wrong' })).status).toBe(401);
  });

  it('signs out: the cookie is cleared and the old value no longer works', async () => {
    const { call, signIn, origin } = await serve();
    const { cookie, csrf } = await signIn();
    expect((await call('DELETE', '/admin/session', { cookie, origin })).status).toBe(403);
    const out = await call('DELETE', '/admin/session', { cookie, origin, 'x-csrf-token': csrf! });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^palaver_admin=; Max-Age=0; Path=\/admin/);
    expect((await call('GET', '/admin/things', { cookie })).status).toBe(401);
  });

  it('refuses an address after a few failed sign-ins, the right token included, and says when to try again', async () => {
    const { signIn } = await serve({ dashboard: { signInLimit: { maxFailures: 3, windowMs: 60_000 } } });
    for (let attempt = 0; attempt < 3; attempt += 1) expect((await signIn(`guess-number-${attempt}-of-many`)).response.status).toBe(401);
    const limited = await signIn();
    expect(limited.response.status).toBe(429);
    expect(Number(limited.response.headers.get('retry-after'))).toBeGreaterThan(50);
    expect(limited.setCookie).toBe('');
  });

  it('counts wrong bearer tokens too: a locked address gets 429 with the right token, on the API and the sign-in', async () => {
    const { call, signIn } = await serve({ dashboard: { signInLimit: { maxFailures: 3, windowMs: 60_000 } } });
    for (let attempt = 0; attempt < 3; attempt += 1)
      expect((await call('GET', '/admin/things', { authorization: `Bearer guess-number-${attempt}-of-many` })).status).toBe(401);
    const limited = await call('GET', '/admin/things', { authorization: `Bearer ${TOKEN}` });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(50);
    expect(((await limited.json()) as Record<string, any>)['error']['code']).toBe('too_many_attempts');
    expect((await signIn()).response.status).toBe(429);
  });

  it('limits wrong bearer tokens with the dashboard off as well (five tries)', async () => {
    const { call } = await serve({ dashboard: false });
    for (let attempt = 0; attempt < 5; attempt += 1)
      expect((await call('GET', '/admin/things', { authorization: `Bearer guess-number-${attempt}-of-many` })).status).toBe(401);
    expect((await call('GET', '/admin/things', { authorization: `Bearer ${TOKEN}` })).status).toBe(429);
  });

  it('a signed-in page keeps working while its address is locked (its cookie proves the token), a wrong sign-in locks the rest', async () => {
    const { call, signIn } = await serve({ dashboard: { signInLimit: { maxFailures: 2, windowMs: 60_000 } } });
    const { cookie } = await signIn();
    for (let attempt = 0; attempt < 2; attempt += 1) expect((await signIn(`guess-number-${attempt}-of-many`)).response.status).toBe(401);
    expect((await call('GET', '/admin/things', { cookie })).status).toBe(200);
    expect((await call('GET', '/admin/things', { authorization: `Bearer ${TOKEN}` })).status).toBe(429);
  });

  it("behind a trusted proxy, counts each client by X-Forwarded-For, so one client's failures lock out only that client", async () => {
    const { call, signIn } = await serve({ trustedProxies: ['127.0.0.1', '::1'], dashboard: { signInLimit: { maxFailures: 3, windowMs: 60_000 } } });
    const from = (client: string) => ({ 'x-forwarded-for': `203.0.113.200, ${client}` });
    for (let attempt = 0; attempt < 3; attempt += 1) expect((await signIn(`guess-number-${attempt}-of-many`, from('198.51.100.1'))).response.status).toBe(401);
    expect((await signIn(TOKEN, from('198.51.100.1'))).response.status).toBe(429);
    expect((await call('GET', '/admin/things', { authorization: `Bearer ${TOKEN}`, ...from('198.51.100.1') })).status).toBe(429);
    // Another operator behind the same proxy, and one whose client forged the left part of the header.
    expect((await signIn(TOKEN, from('198.51.100.2'))).response.status).toBe(200);
    expect((await call('GET', '/admin/things', { authorization: `Bearer ${TOKEN}`, 'x-forwarded-for': '198.51.100.1, 198.51.100.3' })).status).toBe(200);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy, so forging it does not dodge the limit', async () => {
    const { signIn } = await serve({ dashboard: { signInLimit: { maxFailures: 3, windowMs: 60_000 } } });
    for (let attempt = 0; attempt < 3; attempt += 1)
      expect((await signIn(`guess-number-${attempt}-of-many`, { 'x-forwarded-for': `198.51.100.${attempt}` })).response.status).toBe(401);
    expect((await signIn(TOKEN, { 'x-forwarded-for': '198.51.100.99' })).response.status).toBe(429);
  });

  it("gives the chat page's allowed origins nothing under /admin", async () => {
    const web = new WebChannel({ maxInboundChars: 100, logger: silentLogger(), allowedOrigins: ['https://shop.example'], webDir: false });
    const { call, signIn } = await serve({ routes: web.routes });
    const { cookie, csrf } = await signIn();
    const preflight = await call('OPTIONS', '/admin/things', { origin: 'https://shop.example', 'access-control-request-method': 'POST' });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const read = await call('GET', '/admin/things', { cookie, origin: 'https://shop.example' });
    expect(read.headers.get('access-control-allow-origin')).toBeNull();
    const write = await call(
      'POST',
      '/admin/things',
      { cookie, origin: 'https://shop.example', 'x-csrf-token': csrf!, 'content-type': 'application/json' },
      '{}',
    );
    expect(write.status).toBe(403);
    // And the chat API itself still answers that origin.
    const chat = await call('OPTIONS', '/agui', { origin: 'https://shop.example', 'access-control-request-method': 'POST' });
    expect(chat.headers.get('access-control-allow-origin')).toBe('https://shop.example');
  });

  it('is off with the rest of the admin API when there is no admin token', async () => {
    const { call } = await serve({ adminToken: undefined });
    const page = await call('GET', '/admin');
    expect(page.status).toBe(403);
    expect(((await page.json()) as Record<string, any>)['error']['code']).toBe('admin_disabled');
    expect((await call('POST', '/admin/session', { 'content-type': 'application/json' }, JSON.stringify({ token: TOKEN }))).status).toBe(403);
  });

  it('pushes "changed" on /admin/events when the probe\'s answer changes, to a signed-in page only', async () => {
    let state = 'one';
    const { call, signIn } = await serve({ dashboard: { events: async () => state, eventsIntervalMs: 10 } });
    expect((await call('GET', '/admin/events')).status).toBe(401);
    const { cookie } = await signIn();
    const response = await call('GET', '/admin/events', { cookie });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('event: ready')) text += decoder.decode((await reader.read()).value);
    state = 'two';
    while (!text.includes('event: changed')) text += decoder.decode((await reader.read()).value);
    expect(text.match(/event: changed/g)).toHaveLength(1);
    await reader.cancel();
  });
});

describe('dashboard sessions', () => {
  it('end at their expiry, and a new admin token signs everyone out', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = new MemoryDashboardSessions();
    const sessions = new DashboardSessions({ adminToken: TOKEN, store, ttlMs: 60_000, now: () => now });
    const { cookie, session } = await sessions.create();
    expect(await sessions.verify(cookie)).toEqual(session);
    now += 59_000;
    expect(sessions.checkCsrf((await sessions.verify(cookie))!, session.csrfToken)).toBe(true);
    expect(sessions.checkCsrf(session, 'x'.repeat(43))).toBe(false);
    now += 1_000;
    expect(await sessions.verify(cookie)).toBeUndefined();

    now = Date.parse('2026-01-01T00:00:00Z');
    const rotated = new DashboardSessions({ adminToken: `${TOKEN}-rotated`, store, ttlMs: 60_000, now: () => now });
    expect(await rotated.verify(cookie)).toBeUndefined();
  });

  it('honour a sign-out made through another instance on the same store, and keep no cookie in it', async () => {
    const stored: string[] = [];
    const store = new (class extends MemoryDashboardSessions {
      override create(row: NewDashboardSession) {
        stored.push(row.id);
        return super.create(row);
      }
    })();
    const one = new DashboardSessions({ adminToken: TOKEN, store });
    const other = new DashboardSessions({ adminToken: TOKEN, store });
    const { cookie } = await one.create();
    expect(await other.verify(cookie)).toBeDefined();
    await other.revoke(cookie);
    expect(await one.verify(cookie)).toBeUndefined();
    expect(stored).toHaveLength(1);
    expect(cookie).not.toContain(stored[0]);
  });
});
