import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { createEndpointProvider } from '../../src/models/create-model-set.js';
import { nodeUsesEnvProxy } from '../../src/config/env-proxy.js';
import { createHttpTransport, type HttpTransport } from '../../src/http-client/http-transport.js';

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
const transports: HttpTransport[] = [];

function transport(): HttpTransport {
  const made = createHttpTransport();
  transports.push(made);
  return made;
}

afterEach(async () => {
  for (const made of transports.splice(0)) made.close();
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

describe('the model HTTP transport', () => {
  it('sends a JSON body with its length, answers a standard Response, and reuses the connection', async () => {
    const seen: { length: string | undefined; chunked: string | undefined; body: string }[] = [];
    const { url, connections } = await serve((request, body, response) => {
      seen.push({ length: request.headers['content-length'], chunked: request.headers['transfer-encoding'], body });
      response.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req_1' }).end('{"ok":true}');
    });
    const { fetch } = transport();
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${url}/v1/things`, { method: 'post', headers: { 'Content-Type': 'application/json' }, body: '{"n":1}' });
      expect(response.status).toBe(201);
      expect(response.headers.get('x-request-id')).toBe('req_1');
      expect(await response.json()).toEqual({ ok: true });
      // Read once, as any Response.
      expect(response.bodyUsed).toBe(true);
      await expect(response.text()).rejects.toBeInstanceOf(TypeError);
    }
    expect(seen).toEqual(Array.from({ length: 3 }, () => ({ length: '7', chunked: undefined, body: '{"n":1}' })));
    expect(connections()).toBe(1);
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

  it('decodes a gzip-compressed answer, as a compressing gateway sends it', async () => {
    const { url } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync(JSON.stringify(completion('compressed hello'))));
    });
    const reply = await createEndpointProvider({ provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 5_000, maxRetries: 0 }).complete(userSays('Hi'));
    expect(reply.text).toBe('compressed hello');
  });

  it('hands an event stream over as it arrives: the first words reach the caller before the model has finished', async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const { url } = await serve((_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (delta: object, extra: object = {}) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
      response.write(chunk({ role: 'assistant', content: 'Hello' }));
      void finished.then(() => response.end(`${chunk({ content: ' there' })}data: [DONE]\n\n`));
    });
    const deltas: string[] = [];
    const reply = createEndpointProvider({ provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 5_000, maxRetries: 0 }).complete({
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
    const error = await createEndpointProvider({ provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 200, maxRetries: 0 })
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
    const error = await transport()
      .fetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe('fetch failed');
  });

  it('names the socket error when nothing listens, so the model error says why', async () => {
    const { url, server } = await serve(() => {});
    server.close();
    await once(server, 'close');
    const error = await createEndpointProvider({ provider: 'openai-chat', name: 'm', baseUrl: `${url}/v1`, timeoutMs: 2_000, maxRetries: 0 })
      .complete(userSays('Hi'))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ failure: 'unreachable' });
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
  });

  it('rejects with the caller\'s abort, before and while waiting for the answer', async () => {
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

  it('steps aside for the global fetch when Node was told to use the proxy in HTTP(S)_PROXY, which Node applies to its own fetch, not to this pool', async () => {
    expect(nodeUsesEnvProxy({ NODE_USE_ENV_PROXY: '1' }, [])).toBe(true);
    expect(nodeUsesEnvProxy({}, ['--use-env-proxy'])).toBe(true);
    expect(nodeUsesEnvProxy({ NODE_OPTIONS: '--max-old-space-size=512 --use-env-proxy' }, [])).toBe(true);
    expect(nodeUsesEnvProxy({ HTTPS_PROXY: 'http://proxy:3128' }, [])).toBe(false);
    // Told apart by what each sends unasked: undici's fetch names itself, node:http sends no user agent.
    const agents: (string | undefined)[] = [];
    const { url } = await serve((request, _body, response) => {
      agents.push(request.headers['user-agent']);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await (await transport().fetch(`${url}/x`)).json();
    await (await createHttpTransport({ globalFetch: true }).fetch(`${url}/x`)).json();
    expect(agents).toEqual([undefined, 'node']);
  });

  it('answers a 204 without a body, and passes a form body on to the global fetch', async () => {
    const { url } = await serve((request, body, response) => {
      if (request.url === '/empty') response.writeHead(204).end();
      else response.writeHead(200, { 'content-type': 'text/plain' }).end(`${request.headers['content-type']?.split(';')[0]} ${body.includes('name="field"') ? 'with field' : 'without'}`);
    });
    const { fetch } = transport();
    const empty = await fetch(`${url}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const form = new FormData();
    form.set('field', 'value');
    expect(await (await fetch(`${url}/form`, { method: 'POST', body: form })).text()).toBe('multipart/form-data with field');
  });
});
