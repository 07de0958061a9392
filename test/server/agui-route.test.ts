import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel, type WebChannelOptions } from '../../src/channels/web/index.js';
import { ChannelError } from '../../src/domain/errors.js';
import type { ChannelRoute } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, isLoopbackAddress, startHttpServer, type HttpAppOptions, type RunningHttpServer } from '../../src/server/index.js';
import { FakeChannelContext, answer } from '../channels/fake-pipeline.js';
import { ScriptedPipeline, type ScriptedPipelineOptions } from './scripted-pipeline.js';
import { assertValidAguiEvent, parseSse } from './sse.js';

const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface StartOptions {
  readonly pipeline?: ScriptedPipelineOptions;
  readonly channel?: Partial<WebChannelOptions>;
  readonly http?: Partial<HttpAppOptions>;
}

async function start(options: StartOptions = {}): Promise<{ url: string; pipeline: ScriptedPipeline; channel: WebChannel }> {
  const channel = new WebChannel({ maxInboundChars: 100, logger: silentLogger(), showToolDetails: true, ...options.channel });
  const pipeline = new ScriptedPipeline(channel, options.pipeline);
  await channel.start(pipeline);
  const app = createHttpApp({ health: async () => ({ database: { ok: true } }), logger: silentLogger(), routes: channel.routes, ...options.http });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  servers.push(server);
  return { url: server.url, pipeline, channel };
}

function runInput(text: unknown = 'What time is it?', extra: Record<string, unknown> = {}) {
  return {
    threadId: 'thread-1',
    runId: `run-${Math.random().toString(36).slice(2)}`,
    messages: [
      { id: 'u0', role: 'user', content: 'earlier message' },
      { id: 'a0', role: 'assistant', content: 'earlier answer' },
      { id: 'u1', role: 'user', content: text },
    ],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...extra,
  };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function events(response: Response) {
  const list = parseSse(await response.text());
  list.forEach(assertValidAguiEvent);
  return list;
}

describe('POST /agui', () => {
  it('streams a run as valid AG-UI events, in order, over SSE', async () => {
    const { url, pipeline } = await start();
    const input = runInput();
    const response = await post(url, input);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('x-correlation-id')).toBe('corr-1');

    const list = await events(response);
    expect(list.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      ...Array(6).fill('TEXT_MESSAGE_CONTENT'),
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    const text = list
      .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
      .map((e) => e.delta)
      .join('');
    expect(text).toBe('It is 10:30 in Zurich.');
    expect(list[0]).toMatchObject({ threadId: 'thread-1', runId: input.runId, metadata: { correlationId: 'corr-1', sessionId: 'session-thread-1' } });
    expect(list.at(-1)).toMatchObject({
      type: 'RUN_FINISHED',
      result: { correlationId: 'corr-1', sessionId: 'session-thread-1', status: 'completed', replyMessageId: 'reply-1' },
    });

    // A loopback server client without a key that names no user: the thread stands for the account.
    expect(pipeline.received[0]).toMatchObject({
      channel: 'web',
      conversationId: 'thread-1',
      accountId: 'api:thread-1',
      conversationKind: 'direct',
      text: 'What time is it?',
      messageId: input.runId,
      dedupeKey: input.runId,
    });
  });

  it('without showToolDetails sends the tool label over SSE and never the tool name, arguments or result', async () => {
    const { url } = await start({ channel: { showToolDetails: false } });
    const response = await post(url, runInput());
    const wire = await response.text();
    expect(wire).not.toContain('current_time');
    expect(wire).not.toContain('Europe/Zurich');
    expect(wire).not.toContain('2025-01-01T10:30');
    expect(wire).not.toContain('TOOL_CALL');
    const list = parseSse(wire);
    list.forEach(assertValidAguiEvent);
    const progress = list.filter((e) => e.type === 'CUSTOM' && e.name === 'palaver.tool_progress').map((e) => e.value);
    expect(progress).toEqual([
      { toolCallId: 'call-1', status: 'running', label: 'Checking the clock…' },
      { toolCallId: 'call-1', status: 'done' },
    ]);
  });

  it('with showToolDetails sends the tool name, arguments and result over SSE', async () => {
    const { url } = await start({ channel: { showToolDetails: true } });
    const wire = await (await post(url, runInput())).text();
    expect(wire).toContain('"toolCallName":"current_time"');
    expect(wire).toContain('Europe/Zurich');
    expect(wire).toContain('2025-01-01T10:30:00+01:00');
    expect(wire).not.toContain('palaver.tool_progress');
  });

  it('writes events as they happen instead of at the end', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { url } = await start({ pipeline: { gate, noTool: true, reply: 'first words and more', chunkChars: 11 } });
    const response = await post(url, runInput());
    expect(response.headers.get('x-correlation-id')).toBe('corr-1');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    while (!seen.includes('first words')) seen += (await reader.read()).value ?? '';
    expect(seen).toContain('RUN_STARTED');
    expect(seen).not.toContain('RUN_FINISHED');
    release();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
    expect(parseSse(seen + rest).at(-1)?.type).toBe('RUN_FINISHED');
  });

  it('answers a refused message with its ChannelError code before any stream starts, even when accept throws synchronously', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    context.accept = () => {
      throw new ChannelError('inbox_full', 'web', 'Too many messages are waiting in this conversation; try again shortly.');
    };
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    const response = await post(server.url, runInput());
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'inbox_full', message: expect.stringContaining('Too many messages') } });
  });

  it('answers 403 for a message into a conversation that belongs to someone else, and streams nothing', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    context.refuseNext(new ChannelError('forbidden', 'web', 'owned by visitor:someone-else'));
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    const response = await post(server.url, runInput());
    expect(response.status).toBe(403);
    const body = JSON.stringify(await response.json());
    expect(body).toContain('"forbidden"');
    // The pipeline's message may name the owner; the client never sees it.
    expect(body).not.toContain('someone-else');
  });

  it('replays the stored reply to a retried run whose turn completed', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    context.duplicateNext({ sessionId: 's-1', correlationId: 'corr-original', replyMessageId: 'reply-7', text: 'It is 10:30.', status: 'completed' });
    const response = await post(server.url, { ...runInput(), runId: 'r-retried' });
    expect(response.headers.get('x-correlation-id')).toBe('corr-1');
    const list = await events(response);
    expect(list.map((e) => e.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
    expect(list[2]).toMatchObject({ messageId: 'reply-7', delta: 'It is 10:30.' });
    expect(list.at(-1)).toMatchObject({
      runId: 'r-retried',
      result: { status: 'duplicate', replyStatus: 'completed', correlationId: 'corr-original', sessionId: 's-1', replyMessageId: 'reply-7' },
    });
  });

  it('reads text parts, forwardedProps.userId, Accept-Language and x-correlation-id', async () => {
    const { url, pipeline } = await start();
    const input = runInput(
      [
        { type: 'text', text: 'part one' },
        { type: 'text', text: 'part two' },
      ],
      {
        forwardedProps: { userId: 'alice' },
      },
    );
    const response = await post(url, input, { 'accept-language': 'de-CH,de;q=0.9', 'x-correlation-id': 'from-client-7' });
    expect(response.headers.get('x-correlation-id')).toBe('from-client-7');
    await response.text();
    expect(pipeline.received[0]).toMatchObject({ accountId: 'api:alice', text: 'part one\npart two', languageHint: 'de-CH', correlationId: 'from-client-7' });
    // An image named by URL is refused rather than silently dropped: the server fetches nothing a client names.
    const byUrl = await post(
      url,
      runInput([
        { type: 'text', text: 'see' },
        { type: 'image', source: { type: 'url', value: 'https://x/y.png' } },
      ]),
    );
    expect(byUrl.status).toBe(400);
    expect(await byUrl.json()).toMatchObject({ error: { code: 'invalid_input', message: expect.stringContaining('fetches no URL') } });
  });

  it('refuses malformed JSON with 400 invalid_json', async () => {
    const { url } = await start();
    const response = await post(url, '{"threadId": ');
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_json', message: expect.stringContaining('JSON') } });
  });

  it('refuses a body that is not a RunAgentInput, naming the field', async () => {
    const { url } = await start();
    const response = await post(url, { runId: 'r', messages: [] });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_input');
    expect(body.error.message).toContain('threadId');
  });

  it('refuses a run without a user message, and one whose user message is blank', async () => {
    const { url } = await start();
    const none = await post(url, { ...runInput(), messages: [{ id: 'a', role: 'assistant', content: 'hi' }] });
    expect(none.status).toBe(400);
    expect(await none.json()).toMatchObject({ error: { code: 'no_user_message' } });
    const blank = await post(url, runInput('   '));
    expect(blank.status).toBe(400);
    expect(await blank.json()).toMatchObject({ error: { code: 'empty_message' } });
  });

  it('refuses text longer than maxInboundChars before anything is accepted', async () => {
    const { url, pipeline } = await start();
    const response = await post(url, runInput('x'.repeat(101)));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'message_too_long', message: expect.stringContaining('100') } });
    expect(pipeline.received).toHaveLength(0);
  });

  it('refuses a body over maxBodyBytes with 413', async () => {
    const { url } = await start({ channel: { maxBodyBytes: 1000 } });
    const response = await post(url, runInput('y'.repeat(2000)));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'body_too_large' } });
  });

  it('ends the stream with RUN_ERROR without internals when the turn fails, and withdraws the streamed text', async () => {
    const { url } = await start({ pipeline: { noTool: true, fail: new Error('database exploded') } });
    const response = await post(url, runInput());
    expect(response.status).toBe(200);
    const list = await events(response);
    expect(list.slice(-3).map((e) => e.type)).toEqual(['TEXT_MESSAGE_END', 'CUSTOM', 'RUN_ERROR']);
    expect(list.at(-2)).toMatchObject({ name: 'palaver.discard', value: { messageId: 'msg-1' } });
    expect(list.at(-1)).toMatchObject({ code: 'internal_error', message: expect.stringContaining('corr-1') });
    expect(JSON.stringify(list)).not.toContain('database exploded');
  });

  it('hands accept no signal a disconnecting client could abort: the turn outlives its connection', async () => {
    const { url, pipeline } = await start({ pipeline: { delayMs: 100, noTool: true, reply: 'a long reply that takes a while' } });
    const response = await post(url, runInput());
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    expect(pipeline.received).toHaveLength(1);
    expect(pipeline.signals).toEqual([]);
  });

  it('attaches a redelivered run id whose turn has not answered to that turn: it gets the reply, not an empty run', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    // Seen before, unanswered.
    context.duplicateNext();
    const response = await post(server.url, runInput());
    const [message] = await context.waitForMessages(1);
    await answer(channel, context, [message!], { stream: ['It is ', '10:30.'], parts: ['It is 10:30.'] });
    const list = await events(response);
    expect(list.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(
      list
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('It is 10:30.');
    expect(list.at(-1)).toMatchObject({ result: { correlationId: 'corr-1', status: 'completed' } });
  });

  it('gives a retried run the reply of its turn when the turn settles while the store is asked about the run', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    // The store says "not answered yet"; the turn settles before the channel attaches the retry, so it asks again.
    const input = runInput();
    let settle!: () => void;
    context.duplicateNext(undefined, new Promise<void>((resolve) => (settle = resolve)));
    const pending = post(server.url, input);
    const [message] = await context.waitForMessages(1);
    context.duplicateNext({ sessionId: 's-1', correlationId: 'corr-original', replyMessageId: 'reply-7', text: 'It is 10:30.', status: 'completed' });
    await answer(channel, context, [message!], { parts: ['It is 10:30.'] });
    settle();
    const list = await events(await pending);
    expect(
      list
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e['delta'])
        .join(''),
    ).toBe('It is 10:30.');
    expect(list.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'completed' } });
  });

  it('sends a batch reply once, to the last run, and finishes the others as answered together', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    const context = new FakeChannelContext();
    await channel.start(context);
    const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
      host: '127.0.0.1',
      port: 0,
    });
    servers.push(server);
    const first = await post(server.url, { ...runInput('one'), runId: 'r1' });
    const second = await post(server.url, { ...runInput('two'), runId: 'r2' });
    const messages = await context.waitForMessages(2);
    await answer(channel, context, messages, { stream: ['Both ', 'noted.'], parts: ['Both noted.'] });
    const [a, b] = await Promise.all([events(first), events(second)]);
    expect(a.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(a[1]).toMatchObject({ runId: 'r1', result: { status: 'answered_together', answeredIn: 'r2', correlationId: 'corr-2' } });
    expect(
      b
        .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
        .map((e) => e.delta)
        .join(''),
    ).toBe('Both noted.');
    expect(b.at(-1)).toMatchObject({ runId: 'r2', result: { status: 'completed' } });
  });

  it('refuses new runs after stop with 503, and fails send once the client is gone', async () => {
    const { url, channel } = await start();
    await channel.stop();
    await channel.stop();
    const response = await post(url, runInput());
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ error: { code: 'channel_stopped' } });
    const target = { channel: 'web', conversationId: 'thread-1', accountId: 'a', inReplyTo: ['gone'], correlationId: 'c', sessionId: 's' };
    await expect(channel.send(target, 'late')).rejects.toMatchObject({ code: 'client_gone' });
  });

  it('says which mistake was made when started twice', async () => {
    const channel = new WebChannel({ maxInboundChars: 100, webDir: false });
    await channel.start(new FakeChannelContext());
    await expect(channel.start(new FakeChannelContext())).rejects.toThrow(/twice/);
  });
});

describe('API key and client address', () => {
  it('requires the bearer key (or a browser identity) when one is configured', async () => {
    const { url } = await start({ http: { apiKey: 'correct-horse-battery' }, channel: { apiKey: 'correct-horse-battery' } });
    const without = await post(url, runInput());
    expect(without.status).toBe(401);
    expect(await without.json()).toMatchObject({ error: { code: 'no_identity' } });

    const wrong = await post(url, runInput(), { authorization: 'Bearer wrong-key' });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(await wrong.json())).not.toContain('correct-horse');

    const right = await post(url, runInput(), { authorization: 'Bearer correct-horse-battery' });
    expect(right.status).toBe(200);
    expect(parseSse(await right.text()).at(-1)?.type).toBe('RUN_FINISHED');
    // The page itself is public: it holds no data, and gives the browser its visitor cookie.
    expect((await fetch(`${url}/`)).status).toBe(200);
  });

  it('guards /admin routes with the admin token, never with the chat API key', async () => {
    const adminToken = 'admin-token-0123456789';
    const { url } = await start({ http: { apiKey: 'correct-horse-battery', adminToken, extraRoutes: (app) => app.get('/admin/ping', (c) => c.text('pong')) } });
    expect((await fetch(`${url}/admin/ping`)).status).toBe(401);
    // `/admin` itself is the dashboard's sign-in page: public, with no data in it.
    expect((await fetch(`${url}/admin`)).headers.get('content-type')).toContain('text/html');
    expect((await fetch(`${url}/admin/ping`, { headers: { authorization: 'Bearer correct-horse-battery' } })).status).toBe(401);
    const ok = await fetch(`${url}/admin/ping`, { headers: { authorization: `Bearer ${adminToken}` } });
    expect(await ok.text()).toBe('pong');
  });

  it('serves loopback clients when no key is configured', async () => {
    const { url } = await start();
    const response = await post(url, runInput());
    expect(response.status).toBe(200);
    await response.text();
  });

  it('refuses clients of unknown address without a key or a browser identity', async () => {
    // app.request() has no socket, so the address is unknown: the same path a remote client takes.
    const channel = new WebChannel({ maxInboundChars: 100 });
    await channel.start(new FakeChannelContext());
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes });
    const response = await app.request('http://localhost/agui', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(runInput()),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { code: 'no_identity', message: expect.stringContaining('API key') } });
  });

  it('keeps the admin API off without an admin token, for loopback clients too, while /agui does its own checks', async () => {
    const { url } = await start({ http: { extraRoutes: (app) => app.get('/admin/x', (c) => c.text('x')) } });
    const refused = await fetch(`${url}/admin/x`);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { code: 'admin_disabled', message: expect.stringContaining('PALAVER_ADMIN_TOKEN') } });
    expect((await post(url, runInput())).status).toBe(200);
  });

  it('recognises loopback addresses', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::FFFF:127.0.0.9']) expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ['10.0.0.1', '192.168.1.5', '::ffff:10.0.0.1', '128.0.0.1', '1.127.0.0', 'fe80::1', '127.0.0.1.evil', '', undefined]) {
      expect(isLoopbackAddress(address), String(address)).toBe(false);
    }
  });
});

describe('channel routes', () => {
  it('passes the client address to the route, and undefined when unknown', async () => {
    const seen: Array<string | undefined> = [];
    const route: ChannelRoute = {
      method: 'GET',
      path: '/who',
      access: 'public',
      handle: (_request, info) => (seen.push(info.remoteAddress), new Response('ok')),
    };
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route] });
    const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    servers.push(server);
    await (await fetch(`${server.url}/who`)).text();
    await (await app.request('/who')).text();
    expect(seen[0]).toMatch(/127\.0\.0\.1/);
    expect(seen[1]).toBeUndefined();
  });

  it('refuses two routes with the same method and path', () => {
    const route: ChannelRoute = { method: 'POST', path: '/hook', access: 'public', handle: () => new Response('') };
    expect(() => createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route, route] })).toThrow(/POST \/hook/);
  });

  it('answers 500 internal_error without internals when a route throws, and 404 for unknown routes', async () => {
    const route: ChannelRoute = { method: 'GET', path: '/boom', access: 'public', handle: () => Promise.reject(new Error('secret detail')) };
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route] });
    const boom = await app.request('/boom');
    expect(boom.status).toBe(500);
    expect(JSON.stringify(await boom.json())).not.toContain('secret');
    const missing = await app.request('/nowhere');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'not_found' } });
  });
});

describe('GET /health', () => {
  it('answers 200 ok when every check passes', async () => {
    const { url } = await start();
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', checks: { database: { ok: true } } });
  });

  it('answers 503 degraded when a check fails', async () => {
    const { url } = await start({ http: { health: async () => ({ database: { ok: true }, redis: { ok: false, detail: 'timeout' } }) } });
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 'degraded', checks: { redis: { ok: false, detail: 'timeout' } } });
  });

  it('answers 503 when the probe itself throws', async () => {
    const { url } = await start({ http: { health: async () => Promise.reject(new Error('boom')) } });
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 'degraded' });
  });
});

describe('startHttpServer', () => {
  it('picks a free port and closes safely twice', async () => {
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [] });
    const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    await server.close();
    await server.close();
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });

  it('rejects with a clear error when the port is taken', async () => {
    const { url } = await start();
    const port = Number(new URL(url).port);
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [] });
    await expect(startHttpServer(app, { host: '127.0.0.1', port })).rejects.toMatchObject({ code: 'http_listen_failed' });
  });

  it('serves the chat page at /, /chat.js and /chat.css with a same-origin policy', async () => {
    const { url } = await start();
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(await response.text()).toContain('data-testid="send-button"');
    expect((await fetch(`${url}/chat.js`)).headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${url}/chat.css`)).headers.get('content-type')).toMatch(/css/);
  });

  it('fails at construction when the page files are missing', () => {
    expect(() => new WebChannel({ maxInboundChars: 10, webDir: '/nonexistent' })).toThrow(/chat\.html/);
  });
});
