import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Readable } from 'node:stream';
import { Api, InputFile } from 'grammy';
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpointProvider } from '../../src/models/create-model-set.js';
import { proxySettingsFromEnv } from '../../src/config/env-proxy.js';
import { createOutgoingHttp, type OutgoingHttp, type OutgoingHttpOptions } from '../../src/platform/outgoing-http.js';
import { fetchForGrammy } from '../../src/channels/telegram-bot/grammy-fetch.js';

type Handler = (request: IncomingMessage, body: string, response: ServerResponse) => void;

/** A real HTTP server on loopback that counts the connections it was opened. */
async function serve(handler: Handler): Promise<{ url: string; connections: () => number; server: Server }> {
  let connections = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => handler(request, body, response));
  });
  server.on('connection', () => (connections += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections, server };
}

const servers: Server[] = [];
const transports: OutgoingHttp[] = [];

function transport(options?: OutgoingHttpOptions): OutgoingHttp {
  const made = createOutgoingHttp(options);
  transports.push(made);
  return made;
}

/**
 * A tiny HTTP proxy on loopback: forwards plain requests (absolute URL in the request line) and records them; answers
 * CONNECT (for https) by recording it and refusing.
 */
async function forwardingProxy(): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const proxy = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    const forwarded = httpRequest(request.url!, { method: request.method, headers: { ...request.headers, 'x-via': 'test-proxy' } }, (answer) => {
      response.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(response);
    });
    forwarded.on('error', () => response.writeHead(502).end());
    request.pipe(forwarded);
  });
  proxy.on('connect', (request: IncomingMessage, socket: Socket) => {
    requests.push(`CONNECT ${request.url}`);
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  servers.push(proxy);
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, requests };
}

afterEach(async () => {
  for (const made of transports.splice(0)) await made.close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const completion = (text: string) => ({
  id: 'c1',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: text } }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});

const userSays = (text: string) => ({ instructions: '', input: [{ type: 'message' as const, role: 'user' as const, content: text }], tools: [] });

describe('the outgoing HTTP client (model, MCP and Bot API calls)', () => {
  it('carries model calls to the model, and keeps their connection for the next call', async () => {
    const seen: { path: string | undefined; length: string | undefined; model: unknown }[] = [];
    const { url, connections } = await serve((request, body, response) => {
      seen.push({ path: request.url, length: request.headers['content-length'], model: (JSON.parse(body) as { model?: unknown }).model });
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion('Hello!')));
    });
    const model = createEndpointProvider(
      { provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 5_000, maxRetries: 0 },
      { fetch: transport().fetch },
    );
    for (let i = 0; i < 3; i++) expect((await model.complete(userSays('Hi'))).text).toBe('Hello!');
    expect(seen.map(({ path, model: name }) => ({ path, name }))).toEqual(Array.from({ length: 3 }, () => ({ path: '/v1/chat/completions', name: 'm' })));
    expect(seen.every(({ length }) => Number(length) > 0)).toBe(true);
    // undici may open a second connection when a call follows the previous answer within the same tick; not one each.
    expect(connections()).toBeLessThan(3);
  });

  it('follows a redirect, as fetch does', async () => {
    const { url } = await serve((request, _body, response) => {
      if (request.url === '/old') response.writeHead(307, { location: '/new' }).end();
      else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: request.url }));
    });
    expect(await (await transport().fetch(`${url}/old`)).json()).toEqual({ at: '/new' });
  });

  it('gives the answer as a stream, a clone or bytes to whoever reads it so, and drops a byte order mark from text', async () => {
    const { url } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":"é"}')]));
    });
    const { fetch } = transport();
    const response = await fetch(`${url}/x`);
    const copy = response.clone();
    expect(await copy.json()).toEqual({ a: 'é' });
    expect(new TextDecoder('utf-8', { ignoreBOM: true }).decode(await new Response(response.body).arrayBuffer())).toBe('\ufeff{"a":"é"}');
    expect(response.bodyUsed).toBe(true);
  });

  it('hands an event stream over as it arrives: the first words reach the caller before the model has finished', async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const { url } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, extra: object = {}) =>
        `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
      response.write(chunk({ role: 'assistant', content: 'Hello' }));
      void finished.then(() => response.end(`${chunk({ content: ' there' })}data: [DONE]\n\n`));
    });
    const deltas: string[] = [];
    const reply = createEndpointProvider(
      { provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 5_000, maxRetries: 0 },
      { fetch: transport().fetch },
    ).complete({
      ...userSays('Hi'),
      onTextDelta: (delta) => {
        deltas.push(delta);
        // Only once the first words arrived does the server send the rest.
        finish();
      },
    });
    expect((await reply).text).toBe('Hello there');
    expect(deltas).toEqual(['Hello', ' there']);
  });

  it('covers the body with the timeout: headers sent, body never finished, the call fails in time', async () => {
    const { url } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"id":');
    });
    const started = Date.now();
    const error = await createEndpointProvider(
      { provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 200, maxRetries: 0 },
      { fetch: transport().fetch },
    )
      .complete(userSays('Hi'))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: 'unreachable' });
    expect((error as Error).message).toContain('did not answer in time');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('fails a call whose connection is cut mid-answer instead of waiting for ever', async () => {
    const { url } = await serve((request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      response.write('{"id":"c1",');
      setTimeout(() => request.socket.destroy(), 20);
    });
    const error = await createEndpointProvider(
      { provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 60_000, maxRetries: 0 },
      { fetch: transport().fetch },
    )
      .complete(userSays('Hi'))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'ModelError' });
  });

  it('names the socket error when nothing listens, so the model error says why', async () => {
    const { url, server } = await serve(() => {});
    server.close();
    await once(server, 'close');
    const error = await createEndpointProvider(
      { provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 2_000, maxRetries: 0 },
      { fetch: transport().fetch },
    )
      .complete(userSays('Hi'))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: 'unreachable' });
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
  });

  it("rejects with the caller's abort, before and while waiting for the answer", async () => {
    const { url } = await serve(() => {});
    const { fetch } = transport();
    const early = new AbortController();
    early.abort();
    await expect(fetch(`${url}/x`, { signal: early.signal })).rejects.toMatchObject({ name: 'AbortError' });
    const late = new AbortController();
    setTimeout(() => late.abort(), 30);
    await expect(fetch(`${url}/x`, { method: 'POST', body: 'x', signal: late.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('keeps an answer whose status text is not a valid reason phrase, as fetch does', async () => {
    const { url } = await serve((request, _body, response) => {
      // Written raw: Node's server would refuse such a status text itself.
      request.socket.end('HTTP/1.1 200 O\u0001K\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{"ok":true}');
      void response;
    });
    const answer = await transport().fetch(`${url}/x`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ ok: true });
  });

  it('goes through the proxy the environment names, and straight to the hosts NO_PROXY names', async () => {
    expect(proxySettingsFromEnv({ HTTP_PROXY: 'http://upper:1', http_proxy: 'http://lower:2', NO_PROXY: 'localhost, .internal' })).toEqual({
      httpProxy: 'http://lower:2',
      noProxy: 'localhost, .internal',
    });
    expect(proxySettingsFromEnv({ HTTPS_PROXY: ' ' })).toEqual({});
    const { url } = await serve((request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ via: request.headers['x-via'] ?? 'direct' }));
    });
    const proxy = await forwardingProxy();
    const target = new URL(url);
    // "localhost" and "127.0.0.1" reach the same server; only the second is listed in NO_PROXY.
    const proxied = `http://localhost:${target.port}/x`;
    const direct = `${url}/x`;
    const through = transport({ proxy: { httpProxy: proxy.url, noProxy: `127.0.0.1, .example.internal` } });
    expect(await (await through.fetch(proxied)).json()).toEqual({ via: 'test-proxy' });
    expect(await (await through.fetch(direct)).json()).toEqual({ via: 'direct' });
    expect(proxy.requests).toEqual([`GET http://localhost:${target.port}/x`]);
    // No proxy configured: nothing goes through it.
    expect(await (await transport().fetch(proxied)).json()).toEqual({ via: 'direct' });
    expect(proxy.requests).toHaveLength(1);
  });

  it('refuses a proxy variable that is not an http(s) URL, naming it, instead of failing every call later', () => {
    expect(() => proxySettingsFromEnv({ HTTPS_PROXY: 'proxy.internal:3128' })).toThrow(/HTTPS_PROXY is not an http\(s\) URL/);
    expect(() => proxySettingsFromEnv({ http_proxy: 'socks5://127.0.0.1:1080' })).toThrow(/HTTP_PROXY/);
    expect(proxySettingsFromEnv({ HTTPS_PROXY: 'http://proxy.internal:3128', NO_PROXY: 'localhost' })).toEqual({
      httpsProxy: 'http://proxy.internal:3128',
      noProxy: 'localhost',
    });
  });

  it('reaches an https host through the proxy with CONNECT', async () => {
    const proxy = await forwardingProxy();
    // Nothing answers TLS behind the tunnel; what matters is that the proxy was asked for it.
    const error = await transport({ proxy: { httpsProxy: proxy.url } })
      .fetch('https://model.example.test/v1/models')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect(proxy.requests).toEqual(['CONNECT model.example.test:443']);
  });

  it('closes its pool: no connection stays open, and a later call opens a new one', async () => {
    const { url, server } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const made = transport();
    await (await made.fetch(`${url}/x`)).json();
    const open = async (): Promise<number> =>
      new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    expect(await open()).toBe(1);
    await made.close();
    await expect.poll(open).toBe(0);
    await (await made.fetch(`${url}/x`)).json();
    expect(await open()).toBe(1);
  });

  it('lets a call in flight finish when it closes (a turn answering within the grace period), then closes that connection too', async () => {
    let answer: (() => void) | undefined;
    const { url, server } = await serve((_request, _body, response) => {
      answer = () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"late":true}');
    });
    const made = transport();
    const inFlight = made.fetch(`${url}/slow`);
    await expect.poll(() => answer).toBeDefined();
    const closed = made.close();
    answer!();
    expect(await (await inFlight).json()).toEqual({ late: true });
    await closed;
    const open = async (): Promise<number> =>
      new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    await expect.poll(open).toBe(0);
  });

  it('answers a 204 without a body, and sends a form as multipart', async () => {
    const { url } = await serve((request, body, response) => {
      if (request.url === '/empty') response.writeHead(204).end();
      else
        response
          .writeHead(200, { 'content-type': 'text/plain' })
          .end(`${request.headers['content-type']?.split(';')[0]} ${body.includes('name="field"') ? 'with field' : 'without'}`);
    });
    const { fetch } = transport();
    const empty = await fetch(`${url}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const form = new FormData();
    form.set('field', 'value');
    expect(await (await fetch(`${url}/form`, { method: 'POST', body: form })).text()).toBe('multipart/form-data with field');
  });

  it('sends a stream body as it is read, as grammY uploads a file', async () => {
    const { url } = await serve((request, body, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' }).end(`${request.headers['transfer-encoding']} ${body}`);
    });
    const parts = Readable.from([Buffer.from('--b\r\n'), Buffer.from('voice bytes'), Buffer.from('\r\n--b--')], { objectMode: false });
    const answer = await transport().fetch(`${url}/upload`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
      body: parts as unknown as RequestInit['body'],
    });
    expect(await answer.text()).toBe('chunked --b\r\nvoice bytes\r\n--b--');
  });

  it('carries a grammY file upload (a multipart stream) to the Bot API', async () => {
    const uploads: string[] = [];
    const { url } = await serve((request, body, response) => {
      uploads.push(
        `${request.url} ${request.headers['content-type']?.split(';')[0]} ${body.includes('filename=note.ogg') && body.includes('OggS voice') ? 'with file' : 'without'}`,
      );
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ok: true, result: { message_id: 7, date: 0, chat: { id: 5, type: 'private' } } }));
    });
    // As the Telegram bot channel hands it to grammY.
    const api = new Api('123:abc', { apiRoot: url, fetch: fetchForGrammy(transport().fetch) });
    const sent = await api.sendVoice(5, new InputFile(Buffer.from('OggS voice'), 'note.ogg'));
    expect(sent.message_id).toBe(7);
    expect(uploads).toEqual(['/bot123:abc/sendVoice multipart/form-data with file']);
  });
});
