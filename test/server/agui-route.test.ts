import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp, isLoopbackAddress, startHttpServer, type HttpAppOptions, type RunningHttpServer } from '../../src/server/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import type { ConversationHandler } from '../../src/domain/ports/channel.js';
import { ChannelError } from '../../src/domain/errors.js';
import { FakeHandler } from './fake-handler.js';
import { assertValidAguiEvent, parseSse } from './sse.js';

const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function start(overrides: Partial<HttpAppOptions> = {}): Promise<{ url: string; handler: ConversationHandler }> {
  const handler = overrides.handler ?? new FakeHandler();
  const app = createHttpApp({
    handler,
    health: async () => ({ database: { ok: true } }),
    maxInboundChars: 100,
    logger: silentLogger(),
    showToolDetails: true,
    ...overrides,
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  servers.push(server);
  return { url: server.url, handler };
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

describe('POST /agui', () => {
  it('streams a run as valid AG-UI events, in order, over SSE', async () => {
    const { url, handler } = await start();
    const response = await post(url, runInput());
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-correlation-id')).toBe('corr-1');

    const events = parseSse(await response.text());
    events.forEach(assertValidAguiEvent);
    expect(events.map((e) => e.type)).toEqual([
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
    const text = events.filter((e) => e.type === 'TEXT_MESSAGE_CONTENT').map((e) => e.delta).join('');
    expect(text).toBe('It is 10:30 in Zurich.');
    expect(events[0]).toMatchObject({ threadId: 'thread-1', metadata: { correlationId: 'corr-1' } });
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { correlationId: 'corr-1', status: 'completed' } });

    const received = (handler as FakeHandler).received[0];
    expect(received).toMatchObject({ channel: 'web', conversationId: 'thread-1', accountId: 'thread-1', text: 'What time is it?' });
    expect(received?.dedupeKey).toMatch(/^run-/);
  });

  it('writes events as they happen instead of at the end', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const inner = new FakeHandler({ noTool: true });
    const handler: ConversationHandler = {
      async handle(message, options) {
        options?.onEvent?.({ type: 'turn_started', correlationId: 'corr-gate', sessionId: 's' });
        options?.onEvent?.({ type: 'text_delta', messageId: 'm', delta: 'first words' });
        await gate; // the turn cannot finish until the client has seen its start
        return inner.handle(message, options);
      },
    };
    const { url } = await start({ handler });
    const response = await post(url, runInput());
    expect(response.headers.get('x-correlation-id')).toBe('corr-gate');
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

  it('ends with RUN_ERROR carrying the code of a PalaverError, even when thrown synchronously', async () => {
    const handler: ConversationHandler = {
      handle() {
        throw new ChannelError('inbox_full', 'web', 'Too many messages are waiting in this conversation; try again shortly.');
      },
    };
    const { url } = await start({ handler });
    const events = parseSse(await (await post(url, runInput())).text());
    events.forEach(assertValidAguiEvent);
    expect(events.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(events[1]).toMatchObject({ code: 'inbox_full', message: expect.stringContaining('Too many messages') });
  });

  it('reads text parts, forwardedProps.userId and Accept-Language', async () => {
    const { url, handler } = await start();
    const input = runInput([{ type: 'text', text: 'part one' }, { type: 'image', source: { type: 'url', value: 'https://x/y.png' } }, { type: 'text', text: 'part two' }], {
      forwardedProps: { userId: 'alice' },
    });
    const response = await post(url, input, { 'accept-language': 'de-CH,de;q=0.9' });
    await response.text();
    expect((handler as FakeHandler).received[0]).toMatchObject({ accountId: 'alice', text: 'part one\npart two', languageHint: 'de-CH' });
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

  it('refuses a run without a user message', async () => {
    const { url } = await start();
    const response = await post(url, { ...runInput(), messages: [{ id: 'a', role: 'assistant', content: 'hi' }] });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'no_user_message' } });
  });

  it('refuses text longer than maxInboundChars', async () => {
    const { url, handler } = await start();
    const response = await post(url, runInput('x'.repeat(101)));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'message_too_long', message: expect.stringContaining('100') } });
    expect((handler as FakeHandler).received).toHaveLength(0);
  });

  it('refuses a body over maxBodyBytes with 413', async () => {
    const { url } = await start({ maxBodyBytes: 1000 });
    const response = await post(url, runInput('y'.repeat(2000)));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'body_too_large' } });
  });

  it('ends the stream with RUN_ERROR when the handler throws', async () => {
    const { url } = await start({ handler: new FakeHandler({ fail: new Error('database exploded') }) });
    const response = await post(url, runInput());
    expect(response.status).toBe(200);
    const events = parseSse(await response.text());
    events.forEach(assertValidAguiEvent);
    expect(events.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(events[1]).toMatchObject({ code: 'internal_error' });
    expect(String(events[1]?.message)).not.toContain('database exploded');
  });

  it('aborts the handler signal when the client disconnects', async () => {
    const handler = new FakeHandler({ delayMs: 100, noTool: true, reply: 'a long reply that takes a while' });
    const { url } = await start({ handler, headerWaitMs: 10 });
    const response = await post(url, runInput());
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    await expect.poll(() => handler.signals[0]?.aborted, { timeout: 3000 }).toBe(true);
  });
});

describe('API key and client address', () => {
  it('requires the bearer key when one is configured', async () => {
    const { url } = await start({ apiKey: 'correct-horse-battery' });
    const without = await post(url, runInput());
    expect(without.status).toBe(401);
    expect(await without.json()).toMatchObject({ error: { code: 'unauthorized' } });

    const wrong = await post(url, runInput(), { authorization: 'Bearer wrong-key' });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(await wrong.json())).not.toContain('correct-horse');

    const right = await post(url, runInput(), { authorization: 'Bearer correct-horse-battery' });
    expect(right.status).toBe(200);
    expect(parseSse(await right.text()).at(-1)?.type).toBe('RUN_FINISHED');
  });

  it('guards /admin routes with the same key', async () => {
    const { url } = await start({ apiKey: 'correct-horse-battery', extraRoutes: (app) => app.get('/admin/ping', (c) => c.text('pong')) });
    expect((await fetch(`${url}/admin/ping`)).status).toBe(401);
    expect((await fetch(`${url}/admin`)).status).toBe(401);
    const ok = await fetch(`${url}/admin/ping`, { headers: { authorization: 'Bearer correct-horse-battery' } });
    expect(await ok.text()).toBe('pong');
  });

  it('serves loopback clients when no key is configured', async () => {
    const { url } = await start();
    const response = await post(url, runInput());
    expect(response.status).toBe(200);
    await response.text();
  });

  it('refuses clients of unknown address without a key, pointing at PALAVER_API_KEY', async () => {
    // app.request() has no socket, so the address is unknown: the same path a remote client takes.
    const app = createHttpApp({ handler: new FakeHandler(), health: async () => ({}), maxInboundChars: 100, logger: silentLogger() });
    const response = await app.request('/agui', { method: 'POST', body: JSON.stringify(runInput()) });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ error: { code: 'forbidden', message: expect.stringContaining('PALAVER_API_KEY') } });
  });

  it('recognises loopback addresses', () => {
    for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1', '::FFFF:127.0.0.9']) expect(isLoopbackAddress(address), address).toBe(true);
    for (const address of ['10.0.0.1', '192.168.1.5', '::ffff:10.0.0.1', '128.0.0.1', '1.127.0.0', 'fe80::1', '127.0.0.1.evil', '', undefined]) {
      expect(isLoopbackAddress(address), String(address)).toBe(false);
    }
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
    const { url } = await start({ health: async () => ({ database: { ok: true }, redis: { ok: false, detail: 'timeout' } }) });
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 'degraded', checks: { redis: { ok: false, detail: 'timeout' } } });
  });

  it('answers 503 when the probe itself throws', async () => {
    const { url } = await start({ health: async () => Promise.reject(new Error('boom')) });
    const response = await fetch(`${url}/health`);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: 'degraded' });
  });
});

describe('startHttpServer', () => {
  it('picks a free port and closes safely twice', async () => {
    const app = createHttpApp({ handler: new FakeHandler(), health: async () => ({}), maxInboundChars: 10, logger: silentLogger(), webDir: false });
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
    const app = createHttpApp({ handler: new FakeHandler(), health: async () => ({}), maxInboundChars: 10, logger: silentLogger(), webDir: false });
    await expect(startHttpServer(app, { host: '127.0.0.1', port })).rejects.toMatchObject({ code: 'http_listen_failed' });
  });

  it('serves the chat page at /', async () => {
    const { url } = await start();
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/html/);
    expect(await response.text()).toContain('data-testid="send-button"');
  });
});
