import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { WebChannel } from '../../src/channels/web/index.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { echoScript, events, halfBody, newVisitor, postRun, rowCounts, runInput, send, shownText, storedTexts, userToken } from './attack-kit.js';

// Every attack runs against a real Palaver (SQLite file, scripted model over HTTP) served on a real port. "Nothing
// stored" is read from the database file itself, and "nothing answered" from the model server's calls.

const TOKEN_SECRET = 'shop-signing-secret-0123456789abcdef';
const ALLOWED_ORIGIN = 'https://shop.example';

describe('attacks on the web channel (no API key: the default)', () => {
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  let base: string;

  beforeAll(async () => {
    harness = await createHarness(echoScript);
    palaver = await harness.start({
      server: { allowedHosts: ['scrape.internal'] },
      channels: { web: { userTokens: { secret: TOKEN_SECRET, issuer: 'shop', audience: 'palaver-chat' }, allowedOrigins: [ALLOWED_ORIGIN] } },
    });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    base = server.url;
  });

  afterAll(async () => {
    await server?.close();
    await harness?.close();
  });

  /** Runs `attack` and checks it changed no row (users and accounts included) and made no model call. */
  async function nothingStored(attack: () => Promise<void>): Promise<void> {
    const before = rowCounts(harness.databaseUrl);
    const calls = harness.model.calls.length;
    await attack();
    // No wait needed: a run is stored before its request is answered, and an accepted run's stream (which the attack
    // reads to its end) ends only after the model answered. A refused request therefore leaves nothing to come.
    expect(rowCounts(harness.databaseUrl)).toEqual(before);
    expect(harness.model.calls.length).toBe(calls);
  }

  it('leaves no user or account behind for a refused first contact', async () => {
    const a = await newVisitor(base);
    await postRun(base, runInput('t-first-contact', 'mine'), { cookie: a.cookie });
    const b = await newVisitor(base);
    await nothingStored(async () => {
      expect((await postRun(base, runInput('t-first-contact', 'let me in'), { cookie: b.cookie })).status).toBe(403);
    });
  });

  it('refuses a cross-origin HTML form post (text/plain) and the same body without a JSON content type', async () => {
    const victim = await newVisitor(base);
    const body = JSON.stringify(runInput('t-form', 'run save_note for me', { forwardedProps: { userId: 'victim' } }));
    await nothingStored(async () => {
      // What the browser sends for <form enctype="text/plain" action="http://127.0.0.1:PORT/agui"> on evil.example.
      const form = await send(base, {
        method: 'POST',
        path: '/agui',
        headers: { 'content-type': 'text/plain', origin: 'http://evil.example', cookie: victim.cookie, 'sec-fetch-site': 'cross-site' },
        body,
      });
      expect(form.status).toBe(403);
      expect(JSON.parse(form.body)).toMatchObject({ error: { code: 'cross_origin' } });
      // A same-site page (another port of this host) is a different origin: refused too, cookie or not.
      const sameSite = await postRun(base, JSON.parse(body), {
        origin: `http://127.0.0.1:${Number(new URL(base).port) + 1}`,
        cookie: victim.cookie,
        'sec-fetch-site': 'same-site',
      });
      expect(sameSite.status).toBe(403);
      // fetch(…, { mode: 'no-cors' }) can only send a "simple" content type.
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const simple = await send(base, { method: 'POST', path: '/agui', headers: { 'content-type': contentType, cookie: victim.cookie }, body });
        expect(simple.status, contentType).toBe(415);
      }
      const none = await send(base, { method: 'POST', path: '/agui', headers: { cookie: victim.cookie }, body });
      expect(none.status).toBe(415);
      // Without fetch metadata a cross-site request is still told apart by Sec-Fetch-Site alone.
      const metadataOnly = await postRun(base, JSON.parse(body), { cookie: victim.cookie, 'sec-fetch-site': 'cross-site' });
      expect(metadataOnly.status).toBe(403);
    });
    expect(storedTexts(harness.databaseUrl)).not.toContain('run save_note for me');
  });

  it('refuses a foreign Host (DNS rebinding) on every route, the page included', async () => {
    const visitor = await newVisitor(base);
    const port = new URL(base).port;
    await nothingStored(async () => {
      const run = await postRun(base, runInput('t-rebind', 'hello from a rebinding page'), {
        host: `evil.example:${port}`,
        origin: `http://evil.example:${port}`,
        cookie: visitor.cookie,
      });
      expect(run.status).toBe(421);
      expect(JSON.parse(run.body)).toMatchObject({ error: { code: 'misdirected_host' } });
      // Even without Origin (a rebinding page's own navigation) and as a loopback server client.
      expect((await postRun(base, runInput('t-rebind', 'hello'), { host: `evil.example:${port}` })).status).toBe(421);
      const page = await send(base, { path: '/', headers: { host: `evil.example:${port}` } });
      expect(page.status).toBe(421);
      expect(page.headers['set-cookie']).toBeUndefined();
      expect((await send(base, { path: '/conversations', headers: { host: `evil.example:${port}`, cookie: visitor.cookie } })).status).toBe(421);
    });
    // Loopback names and addresses are this server.
    expect((await send(base, { path: '/', headers: { host: `localhost:${port}` } })).status).toBe(200);
  });

  it('refuses a forged forwardedProps.userId from a browser, and a browser pretending to be a server client', async () => {
    const visitor = await newVisitor(base);
    await nothingStored(async () => {
      const forged = await postRun(base, runInput('t-forged', 'I am alice now', { forwardedProps: { userId: 'alice' } }), { cookie: visitor.cookie });
      expect(forged.status).toBe(403);
      expect(JSON.parse(forged.body)).toMatchObject({ error: { code: 'forbidden', message: expect.stringContaining('API key') } });
      // A same-origin page on loopback is still a browser, not the server-to-server client of the no-key mode.
      const origin = await postRun(base, runInput('t-forged', 'I am alice now', { forwardedProps: { userId: 'alice' } }), { origin: base });
      expect(origin.status).toBe(401);
      const listing = await send(base, { path: '/conversations?userId=alice', headers: { cookie: visitor.cookie } });
      expect(listing.status).toBe(403);
    });
  });

  it("refuses a message into another visitor's thread, also while their turn runs, and never answers it as them", async () => {
    const a = await newVisitor(base);
    const b = await newVisitor(base);
    const first = await postRun(base, runInput('t-owned-by-a', 'my secret plan'), { cookie: a.cookie });
    expect(first.status).toBe(200);
    expect(shownText(first)).toBe('echo: my secret plan');

    // b writes into a's thread while a's next turn is running (the model takes 600 ms on "slow").
    const callsBefore = harness.model.calls.length;
    let aAnswered = false;
    const running = postRun(base, runInput('t-owned-by-a', 'slow question'), { cookie: a.cookie }).finally(() => (aAnswered = true));
    // a's turn is at the model (which holds "slow" answers for 600 ms) before b writes.
    await expect.poll(() => harness.model.calls.slice(callsBefore).some((call) => JSON.stringify(call.messages).includes('slow question'))).toBe(true);
    const before = rowCounts(harness.databaseUrl);
    const intruder = await postRun(base, runInput('t-owned-by-a', 'what did a say? tell me the plan'), { cookie: b.cookie });
    // The case is the one named: b was refused while a's turn still ran (a slow machine fails here, never skips).
    expect(aAnswered, "a's turn had ended before b wrote; the case was not tested").toBe(false);
    expect(intruder.status).toBe(403);
    expect(intruder.body).not.toContain('secret plan');
    const answered = await running;
    expect(shownText(answered)).toBe('echo: slow question');
    // a's turn saw only a's messages; b's text reached no model call and no table.
    const texts = harness.model.calls.slice(callsBefore - 1).flatMap((call) => call.history.map((item) => JSON.stringify(item)));
    expect(texts.join('\n')).not.toContain('tell me the plan');
    expect(storedTexts(harness.databaseUrl)).not.toContain('what did a say? tell me the plan');
    const after = rowCounts(harness.databaseUrl);
    expect(after.inbound_messages - before.inbound_messages).toBe(0);

    // Nor can b read the thread or see it listed.
    expect((await send(base, { path: '/conversations/messages?id=t-owned-by-a', headers: { cookie: b.cookie } })).status).toBe(403);
    const bList = JSON.parse((await send(base, { path: '/conversations', headers: { cookie: b.cookie } })).body) as { conversations: { id: string }[] };
    expect(bList.conversations.map((c) => c.id)).not.toContain('t-owned-by-a');
    const aList = JSON.parse((await send(base, { path: '/conversations', headers: { cookie: a.cookie } })).body) as { conversations: { id: string }[] };
    expect(aList.conversations.map((c) => c.id)).toContain('t-owned-by-a');
    const transcript = JSON.parse((await send(base, { path: '/conversations/messages?id=t-owned-by-a', headers: { cookie: a.cookie } })).body) as {
      messages: { role: string; text: string }[];
    };
    expect(transcript.messages.map((m) => m.text)).toEqual(['my secret plan', 'echo: my secret plan', 'slow question', 'echo: slow question']);
  });

  it('answers a replayed run id with the stored reply, storing and asking nothing new; a replay by someone else is refused', async () => {
    const a = await newVisitor(base);
    const input = runInput('t-replay', 'what time is it');
    const first = await postRun(base, input, { cookie: a.cookie });
    expect(shownText(first)).toBe('echo: what time is it');
    const firstEnd = events(first).at(-1)!;

    await nothingStored(async () => {
      const replay = await postRun(base, input, { cookie: a.cookie });
      expect(replay.status).toBe(200);
      expect(shownText(replay)).toBe('echo: what time is it');
      expect(events(replay).at(-1)).toMatchObject({
        type: 'RUN_FINISHED',
        // (The stored reply's message id is the store's; the first run reported the turn's streaming id.)
        result: {
          status: 'duplicate',
          replyStatus: 'completed',
          correlationId: (firstEnd.result as { correlationId: string }).correlationId,
          sessionId: (firstEnd.result as { sessionId: string }).sessionId,
          replyMessageId: (firstEnd.result as { replyMessageId: string }).replyMessageId,
        },
      });
      // The same run id from another visitor is a message into a's thread: refused, and not answered with a's reply.
      const b = await newVisitor(base);
      const stolen = await postRun(base, input, { cookie: b.cookie });
      expect(stolen.status).toBe(403);
      expect(stolen.body).not.toContain('echo:');
    });
  });

  it('refuses forged, expired, wrongly addressed and subject-less user tokens; a valid one talks as its own user', async () => {
    const cases: Record<string, string> = {
      forged: await userToken('another-secret-that-is-long-enough!!', { sub: 'u1', iss: 'shop', aud: 'palaver-chat' }),
      expired: await userToken(TOKEN_SECRET, { sub: 'u1', iss: 'shop', aud: 'palaver-chat', expiresIn: Math.floor(Date.now() / 1000) - 60 }),
      noExp: await userToken(TOKEN_SECRET, { sub: 'u1', iss: 'shop', aud: 'palaver-chat', noExp: true }),
      wrongIssuer: await userToken(TOKEN_SECRET, { sub: 'u1', iss: 'evil', aud: 'palaver-chat' }),
      wrongAudience: await userToken(TOKEN_SECRET, { sub: 'u1', iss: 'shop', aud: 'someone-else' }),
      noSubject: await userToken(TOKEN_SECRET, { iss: 'shop', aud: 'palaver-chat' }),
      garbage: 'not.a.jwt',
      none: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(`{"sub":"u1","exp":${Math.floor(Date.now() / 1000) + 300}}`).toString('base64url')}.`,
    };
    await nothingStored(async () => {
      for (const [name, token] of Object.entries(cases)) {
        const response = await postRun(base, runInput(`t-token-${name}`, `token attack ${name}`), { 'x-palaver-user-token': token });
        expect(response.status, name).toBe(401);
        const { error } = JSON.parse(response.body) as { error: { code: string; message: string } };
        expect(error.code, name).toBe(name === 'expired' ? 'user_token_expired' : 'invalid_user_token');
        expect(response.body).not.toContain(token);
      }
    });
    const valid = await userToken(TOKEN_SECRET, { sub: 'shop-user-42', iss: 'shop', aud: 'palaver-chat' });
    const ok = await postRun(base, runInput('t-token-ok', 'hello from the shop'), { 'x-palaver-user-token': valid, origin: ALLOWED_ORIGIN });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
    expect(ok.headers['access-control-allow-credentials']).toBeUndefined();
    expect(shownText(ok)).toBe('echo: hello from the shop');
    expect(await palaver.store.users.findByAccount('web', 'token:shop-user-42')).toBeDefined();
    // The token's user is not the visitor of the same name, nor can it write into a visitor's thread.
    const visitor = await newVisitor(base);
    await postRun(base, runInput('t-visitor-own', 'mine'), { cookie: visitor.cookie });
    expect((await postRun(base, runInput('t-visitor-own', 'yours?'), { 'x-palaver-user-token': valid })).status).toBe(403);
  });

  it('refuses a visitor cookie with a missing or wrong signature, and a request with no identity at all', async () => {
    const visitor = await newVisitor(base);
    const [name, value] = visitor.cookie.split('=') as [string, string];
    const [version, id, signature] = value.split('.') as [string, string, string];
    const tampered = {
      'no signature': `${name}=${version}.${id}`,
      'empty signature': `${name}=${version}.${id}.`,
      'another id': `${name}=${version}.${'A'.repeat(22)}.${signature}`,
      'flipped signature': `${name}=${version}.${id}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`,
      'unsigned plain id': `${name}=alice`,
    };
    await nothingStored(async () => {
      for (const [label, cookie] of Object.entries(tampered)) {
        const response = await postRun(base, runInput('t-cookie', `cookie attack ${label}`), { cookie, origin: base });
        expect(response.status, label).toBe(401);
        expect(JSON.parse(response.body), label).toMatchObject({ error: { code: 'invalid_visitor_cookie' } });
      }
      // A browser request with neither cookie nor token (the page was never loaded).
      const anonymous = await postRun(base, runInput('t-cookie', 'who am I'), { origin: base });
      expect(anonymous.status).toBe(401);
      expect(JSON.parse(anonymous.body)).toMatchObject({ error: { code: 'no_identity' } });
    });
    // The page replaces a bad cookie with a fresh signed one.
    const page = await send(base, { path: '/', headers: { cookie: tampered['flipped signature']! } });
    expect(page.headers['set-cookie']?.[0]).toMatch(/^palaver_visitor=v1\.[\w-]+\.[\w-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
  });

  it('refuses NUL and lone surrogates in the text, thread id, run id and user id with a clear 400', async () => {
    const visitor = await newVisitor(base);
    const bad = [
      runInput('t-nul', 'before\u0000after'),
      runInput('t-\u0000-thread', 'hello'),
      { ...runInput('t-run', 'hello'), runId: 'run-\u0000' },
      runInput('t-lone', 'broken \ud800 text'),
      runInput('t-lone-\udc00', 'hello'),
      { ...runInput('t-run', 'hello'), runId: 'run-\ud83d' },
    ];
    await nothingStored(async () => {
      for (const body of bad) {
        const response = await postRun(base, body, { cookie: visitor.cookie });
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect(JSON.parse(response.body)).toMatchObject({ error: { code: 'invalid_input', message: expect.stringMatching(/NUL|surrogate/) } });
      }
      // The user id of a server client, too.
      const serverClient = await postRun(base, runInput('t-user', 'hello', { forwardedProps: { userId: 'bob\u0000' } }));
      expect(serverClient.status).toBe(400);
      const transcript = await send(base, { path: `/conversations/messages?id=${encodeURIComponent('t-\u0000')}`, headers: { cookie: visitor.cookie } });
      expect(transcript.status).toBe(400);
    });
    // A well-formed astral character is fine.
    const emoji = await postRun(base, runInput('t-emoji', 'hello 🦜'), { cookie: visitor.cookie });
    expect(shownText(emoji)).toBe('echo: hello 🦜');
  });

  it('gives CORS headers and preflights only to configured origins', async () => {
    const allowed = await send(base, {
      method: 'OPTIONS',
      path: '/agui',
      headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-palaver-user-token' },
    });
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
    expect(allowed.headers['access-control-allow-headers']).toContain('x-palaver-user-token');
    expect(allowed.headers['access-control-allow-headers']).not.toContain('authorization');
    const foreign = await send(base, {
      method: 'OPTIONS',
      path: '/agui',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(foreign.status).toBe(403);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    const nullOrigin = await postRun(base, runInput('t-null', 'from a sandboxed frame'), { origin: 'null' });
    expect(nullOrigin.status).toBe(403);
    // The page's own origin needs no CORS header.
    const visitor = await newVisitor(base);
    const own = await postRun(base, runInput('t-own-origin', 'same origin'), { origin: base, cookie: visitor.cookie });
    expect(own.status).toBe(200);
    expect(own.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('keeps /metrics loopback-only while /agui decides for itself', async () => {
    expect((await send(base, { path: '/metrics' })).status).toBe(200);
  });

  it('refuses /health and /metrics to a rebound host name (DNS rebinding), and serves them by loopback name or IP', async () => {
    const port = new URL(base).port;
    for (const path of ['/health', '/metrics']) {
      const rebound = await send(base, { path, headers: { host: `evil.example:${port}` } });
      expect(rebound.status, path).toBe(421);
      expect(JSON.parse(rebound.body), path).toMatchObject({ error: { code: 'misdirected_host' } });
      expect(rebound.body, path).not.toContain('palaver_');
      // A scraper by loopback name, by IP, or by a name in server.allowedHosts.
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `scrape.internal:${port}`]) {
        expect((await send(base, { path, headers: { host } })).status, `${path} ${host}`).toBe(200);
      }
    }
  });
});

describe('attacks with an API key configured', () => {
  let harness: Harness;
  let palaver: Palaver;
  let server: RunningHttpServer;
  let base: string;
  const API_KEY = 'server-to-server-key-123';

  beforeAll(async () => {
    harness = await createHarness(echoScript);
    palaver = await harness.start({ server: { apiKey: API_KEY } });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    base = server.url;
  });

  afterAll(async () => {
    await server?.close();
    await harness?.close();
  });

  it('lets only the key name users; loopback without it is nobody; a visitor still chats by cookie', async () => {
    const before = rowCounts(harness.databaseUrl);
    expect((await postRun(base, runInput('t-k', 'hi', { forwardedProps: { userId: 'alice' } }))).status).toBe(401);
    expect((await postRun(base, runInput('t-k', 'hi', { forwardedProps: { userId: 'alice' } }), { authorization: 'Bearer wrong-key-123456' })).status).toBe(
      401,
    );
    expect(rowCounts(harness.databaseUrl)).toEqual(before);

    const named = await postRun(base, runInput('t-alice', 'hi as alice', { forwardedProps: { userId: 'alice' } }), { authorization: `Bearer ${API_KEY}` });
    expect(shownText(named)).toBe('echo: hi as alice');
    expect(await palaver.store.users.findByAccount('web', 'api:alice')).toBeDefined();
    // Not the same account as a visitor or a token user that happens to be called alice.
    expect(await palaver.store.users.findByAccount('web', 'alice')).toBeUndefined();

    const visitor = await newVisitor(base);
    const chat = await postRun(base, runInput('t-visitor', 'hello'), { cookie: visitor.cookie, origin: base });
    expect(shownText(chat)).toBe('echo: hello');
    // The key still guards /metrics.
    expect((await send(base, { path: '/metrics' })).status).toBe(401);
  });
});

describe('slow and half-sent requests', () => {
  let harness: Harness;
  let server: RunningHttpServer;

  beforeAll(async () => {
    harness = await createHarness(echoScript);
    // The web channel given by hand, with a short body deadline so the test need not wait the default 10 s.
    const web = new WebChannel({ maxInboundChars: 1000, bodyTimeoutMs: 300, webDir: false });
    const palaver = await harness.start({ channels: { web: { enabled: false } } }, { channels: [web] });
    server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await server?.close();
    await harness?.close();
  });

  it('answers a half-sent body with 408 within the deadline and stores nothing', async () => {
    const before = rowCounts(harness.databaseUrl);
    const whole = JSON.stringify(runInput('t-half', 'half a message'));
    const result = await halfBody(server.url, '/agui', whole.length, whole.slice(0, 40));
    expect(result.statusLine).toBe('HTTP/1.1 408 Request Timeout');
    expect(result.closedAfterMs).toBeLessThan(3000);
    expect(rowCounts(harness.databaseUrl)).toEqual(before);
  });
});
