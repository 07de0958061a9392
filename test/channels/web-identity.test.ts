import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { RequestGuard } from '../../src/channels/web/request-guard.js';
import { WebIdentity } from '../../src/channels/web/web-identity.js';
import { loadConfig, parseConfig, resolveConfigPaths } from '../../src/config/index.js';
import type { Logger } from '../../src/observability/logger.js';
import { silentLogger } from '../../src/observability/logger.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'palaver-web-identity-'));
}

/** A logger that keeps its warnings. */
function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = silentLogger();
  const wrapped = Object.create(logger) as Logger & { warn: (...args: unknown[]) => void };
  wrapped.warn = (...args: unknown[]) => void warnings.push(String(args.find((a) => typeof a === 'string')));
  return { logger: wrapped, warnings };
}

function request(headers: Record<string, string>, url = 'http://127.0.0.1:3000/agui'): Request {
  return new Request(url, { method: 'POST', headers });
}

describe('visitor cookies', () => {
  it('generates a secret once, keeps it in its file (mode 0600) with a warning, and reuses it after a restart', () => {
    const file = join(tempDir(), 'data', 'web-cookie-secret');
    const first = recordingLogger();
    const identity = new WebIdentity({ cookieSecretFile: file, logger: first.logger });
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.warnings.join('\n')).toMatch(/generated a web cookie secret/);
    const cookie = identity.newVisitorCookie();

    const again = recordingLogger();
    const restarted = new WebIdentity({ cookieSecretFile: file, logger: again.logger });
    expect(again.warnings).toEqual([]);
    expect(restarted.hasValidVisitorCookie(request({ cookie: `palaver_visitor=${cookie}` }))).toBe(true);
    // Another secret does not know the cookie.
    const other = new WebIdentity({ cookieSecret: 'x'.repeat(40), logger: silentLogger() });
    expect(other.hasValidVisitorCookie(request({ cookie: `palaver_visitor=${cookie}` }))).toBe(false);
    expect(readFileSync(file, 'utf8').trim().length).toBeGreaterThanOrEqual(32);
  });

  it('refuses a secret file too short to be a secret, instead of overwriting it', () => {
    const file = join(tempDir(), 'web-cookie-secret');
    writeFileSync(file, 'short\n');
    expect(() => new WebIdentity({ cookieSecretFile: file, logger: silentLogger() })).toThrow(/shorter than 32/);
  });

  it('warns when the secret can only live in memory', () => {
    const { logger, warnings } = recordingLogger();
    new WebIdentity({ logger });
    expect(warnings.join('\n')).toMatch(/in memory/);
  });

  it('tells the visitor apart by cookie, never by the cookie of another name or a second copy', async () => {
    const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), logger: silentLogger() });
    const cookie = identity.newVisitorCookie();
    const result = await identity.identify(request({ cookie: `other=1; palaver_visitor=${cookie}` }), '10.0.0.5');
    expect(result).toMatchObject({ ok: true, caller: { kind: 'visitor', accountId: `visitor:${cookie.split('.')[1]}` } });
    expect(identity.visitorSetCookie(cookie, request({}))).toMatch(/^palaver_visitor=.*; HttpOnly; SameSite=Lax$/);
  });

  it("takes the visitor id from x-palaver-visitor where the browser keeps no cookie (the widget's frame), checked as the cookie", async () => {
    const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), logger: silentLogger() });
    const visitor = identity.newVisitorCookie();
    const other = identity.newVisitorCookie();
    expect(await identity.identify(request({ 'x-palaver-visitor': visitor }), '10.0.0.5')).toMatchObject({
      ok: true,
      caller: { kind: 'visitor', accountId: `visitor:${visitor.split('.')[1]}` },
    });
    // The cookie wins when both come.
    expect(await identity.identify(request({ 'x-palaver-visitor': other, cookie: `palaver_visitor=${visitor}` }), '10.0.0.5')).toMatchObject({
      caller: { accountId: `visitor:${visitor.split('.')[1]}` },
    });
    // A forged id: its signature does not match.
    const forged = `v1.${'A'.repeat(22)}.${visitor.split('.')[2]}`;
    expect(await identity.identify(request({ 'x-palaver-visitor': forged }), '10.0.0.5')).toMatchObject({
      ok: false,
      status: 401,
      code: 'invalid_visitor_cookie',
    });
  });

  it("over https (TLS or a proxy's X-Forwarded-Proto) uses a Secure __Host- cookie and ignores the plain name", async () => {
    const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), logger: silentLogger() });
    const cookie = identity.newVisitorCookie();
    const https = request({}, 'https://chat.example.com/');
    expect(identity.visitorSetCookie(cookie, https)).toMatch(
      /^__Host-palaver_visitor=v1\.[\w-]+\.[\w-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/,
    );
    expect(identity.visitorSetCookie(cookie, request({ 'x-forwarded-proto': 'https' }))).toMatch(/^__Host-palaver_visitor=.*; Secure$/);
    // A plain-named cookie planted by a sibling subdomain does not count on the https site.
    expect(await identity.identify(request({ 'x-forwarded-proto': 'https', cookie: `palaver_visitor=${cookie}` }), '10.0.0.1')).toMatchObject({
      ok: false,
      code: 'no_identity',
    });
    expect(await identity.identify(request({ 'x-forwarded-proto': 'https', cookie: `__Host-palaver_visitor=${cookie}` }), '10.0.0.1')).toMatchObject({
      ok: true,
      caller: { kind: 'visitor' },
    });
  });
});

describe('who is a server client', () => {
  const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), logger: silentLogger() });
  const keyed = new WebIdentity({ cookieSecret: 's'.repeat(40), apiKey: 'the-api-key-123', logger: silentLogger() });

  it('without a key: a loopback client that is no browser; not a remote one, not a page', async () => {
    expect(await identity.identify(request({}), '127.0.0.1')).toMatchObject({ ok: true, caller: { kind: 'server', via: 'loopback' } });
    expect(await identity.identify(request({}), '::1')).toMatchObject({ ok: true, caller: { kind: 'server' } });
    expect(await identity.identify(request({}), '192.168.1.20')).toMatchObject({ ok: false, status: 401, code: 'no_identity' });
    expect(await identity.identify(request({}), undefined)).toMatchObject({ ok: false, code: 'no_identity' });
    expect(await identity.identify(request({ origin: 'http://127.0.0.1:3000' }), '127.0.0.1')).toMatchObject({ ok: false, code: 'no_identity' });
    expect(await identity.identify(request({ 'sec-fetch-site': 'same-origin' }), '127.0.0.1')).toMatchObject({ ok: false, code: 'no_identity' });
  });

  it('with a key: only the key, from anywhere; loopback alone is nobody', async () => {
    expect(await keyed.identify(request({ authorization: 'Bearer the-api-key-123' }), '203.0.113.9')).toMatchObject({
      ok: true,
      caller: { kind: 'server', via: 'api_key' },
    });
    expect(await keyed.identify(request({ authorization: 'Bearer nope' }), '127.0.0.1')).toMatchObject({ ok: false, status: 401, code: 'unauthorized' });
    expect(await keyed.identify(request({}), '127.0.0.1')).toMatchObject({ ok: false, code: 'no_identity' });
  });
});

describe('user tokens from a JWKS', () => {
  it('accepts a token signed by a key of the JWKS and refuses one signed by another key or with HS256', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const stranger = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const jwks = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    try {
      const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
      const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), userTokens: { jwksUrl, audience: 'chat' }, logger: silentLogger() });
      const sign = (key: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'], kid: string) =>
        new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid }).setSubject('u-7').setAudience('chat').setExpirationTime('2m').sign(key);
      const ok = await identity.identify(request({ 'x-palaver-user-token': await sign(privateKey, 'k1') }), '10.0.0.1');
      expect(ok).toMatchObject({ ok: true, caller: { kind: 'token', accountId: 'token:u-7' } });
      const forged = await identity.identify(request({ 'x-palaver-user-token': await sign(stranger.privateKey, 'k1') }), '10.0.0.1');
      expect(forged).toMatchObject({ ok: false, status: 401, code: 'invalid_user_token' });
      const hs = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('u-7')
        .setAudience('chat')
        .setExpirationTime('2m')
        .sign(new TextEncoder().encode('k'.repeat(40)));
      expect(await identity.identify(request({ 'x-palaver-user-token': hs }), '10.0.0.1')).toMatchObject({ ok: false, code: 'invalid_user_token' });
    } finally {
      await new Promise((resolve) => jwks.close(resolve));
    }
  });

  it('refuses tokens when none are configured', async () => {
    const identity = new WebIdentity({ cookieSecret: 's'.repeat(40), logger: silentLogger() });
    expect(await identity.identify(request({ 'x-palaver-user-token': 'a.b.c' }), '127.0.0.1')).toMatchObject({ ok: false, code: 'user_tokens_off' });
  });
});

describe('same-origin guard', () => {
  const guard = new RequestGuard({
    allowedHosts: ['chat.example.com', 'alt.example.com:8443'],
    allowedOrigins: ['https://shop.example'],
    serverHost: 'palaver.internal',
  });
  const at = (host: string, headers: Record<string, string> = {}) => request({ host, 'content-type': 'application/json', ...headers });

  it('serves loopback names, IP addresses, the server host and allowed hosts; refuses other names', () => {
    for (const host of [
      'localhost:3000',
      'app.localhost:3000',
      '127.0.0.1:3000',
      '[::1]:3000',
      '192.168.1.5:3000',
      'palaver.internal:3000',
      'chat.example.com',
      'alt.example.com:8443',
    ]) {
      expect(guard.checkHost(at(host)), host).toBeUndefined();
    }
    for (const host of ['evil.example:3000', 'localhost.evil.example', 'alt.example.com:9999', '127.0.0.1.nip.io', 'chat.example.com.evil', '']) {
      expect(guard.checkHost(at(host))?.status, host).toBe(421);
    }
  });

  it('takes the own origin and allowed origins, refuses the rest and requires JSON for writes', () => {
    expect(guard.check(at('chat.example.com', { origin: 'https://chat.example.com' }), 'write')).toMatchObject({ ok: true, cors: {} });
    expect(guard.check(at('chat.example.com:443', { origin: 'https://chat.example.com' }), 'write')).toMatchObject({ ok: true });
    expect(guard.check(at('localhost:3000', { origin: 'https://shop.example' }), 'write')).toMatchObject({
      ok: true,
      cors: { 'access-control-allow-origin': 'https://shop.example' },
    });
    expect(guard.check(at('localhost:3000', { origin: 'http://localhost:3001' }), 'write')).toMatchObject({ ok: false, status: 403 });
    expect(guard.check(at('localhost:3000', { origin: 'null' }), 'write')).toMatchObject({ ok: false, status: 403 });
    expect(guard.check(at('localhost:3000', { 'sec-fetch-site': 'same-site' }), 'read')).toMatchObject({ ok: false, status: 403 });
    expect(guard.check(at('localhost:3000', { 'sec-fetch-site': 'same-origin' }), 'read')).toMatchObject({ ok: true });
    expect(guard.check(request({ host: 'localhost:3000', 'content-type': 'application/json; charset=utf-8' }), 'write')).toMatchObject({ ok: true });
    expect(guard.check(request({ host: 'localhost:3000', 'content-type': 'text/plain' }), 'write')).toMatchObject({ ok: false, status: 415 });
    expect(guard.check(request({ host: 'localhost:3000' }), 'read')).toMatchObject({ ok: true });
  });
});

describe('channels.web config', () => {
  it('takes the identity and origin keys, refusing weak secrets, bad origins and unknown keys', () => {
    const config = parseConfig({
      model: { name: 'm' },
      channels: {
        web: {
          cookieSecret: 'c'.repeat(32),
          userTokens: { jwksUrl: 'https://id.example/jwks.json', issuer: 'id', audience: 'chat' },
          allowedOrigins: ['https://shop.example'],
          allowedHosts: ['chat.example.com'],
        },
      },
    });
    expect(config.channels.web).toMatchObject({ enabled: true, allowedOrigins: ['https://shop.example'], userTokens: { issuer: 'id' } });
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { cookieSecret: 'short' } } })).toThrow(/cookieSecret/);
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { userTokens: { issuer: 'id' } } } })).toThrow(/exactly one of secret and jwksUrl/);
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { allowedOrigins: ['https://shop.example/path'] } } })).toThrow(/origin/);
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { allowedOrigin: [] } } })).toThrow(/allowedOrigins/);
  });

  it('reads PALAVER_COOKIE_SECRET and PALAVER_USER_TOKEN_SECRET from the environment', () => {
    const dir = tempDir();
    const { config } = loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'm', PALAVER_COOKIE_SECRET: 'e'.repeat(40), PALAVER_USER_TOKEN_SECRET: 't'.repeat(40) } });
    expect(config.channels.web.cookieSecret).toBe('e'.repeat(40));
    expect(config.channels.web.userTokens?.secret).toBe('t'.repeat(40));
  });

  it('keeps a generated secret beside the SQLite file, in data/ for PostgreSQL, and in memory for :memory:', () => {
    const parse = (url: string) => resolveConfigPaths(parseConfig({ model: { name: 'm' }, database: { url } }), '/srv/agent').channels.web.cookieSecretFile;
    expect(parse('sqlite:./db/palaver.db')).toBe('/srv/agent/db/web-cookie-secret');
    expect(parse('sqlite:///var/lib/palaver/p.db')).toBe('/var/lib/palaver/web-cookie-secret');
    expect(parse('postgres://u@h/db')).toBe('/srv/agent/data/web-cookie-secret');
    expect(parse('sqlite::memory:')).toBeUndefined();
    const chosen = resolveConfigPaths(parseConfig({ model: { name: 'm' }, channels: { web: { cookieSecretFile: 'secrets/cookie' } } }), '/srv/agent');
    expect(chosen.channels.web.cookieSecretFile).toBe('/srv/agent/secrets/cookie');
  });
});
