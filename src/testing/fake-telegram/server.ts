import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerMethod } from './bot-api.js';
import type { Faults } from './faults.js';
import type { FakeTelegramState } from './state.js';
import type { FakeCall } from './types.js';

/**
 * The fake's HTTP side on loopback: `/bot<token>/<method>` (JSON, form or multipart parameters, as grammY sends
 * them; also under `/via/<label>/`, the label recorded on the call) answered by `answerMethod` with the faults a test ordered, and `/file/bot<token>/<path>` serving files.
 */
export async function listen(state: FakeTelegramState, faults: Faults, port: number): Promise<{ readonly port: number; close(): Promise<void> }> {
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    // `apiRoot + '/via/<label>'` tells callers apart (several processes on one fake): the label is kept on each call.
    const via = /^\/via\/([A-Za-z0-9_-]{1,40})(\/.*)$/.exec(url.pathname);
    if (via) url.pathname = via[2]!;
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && fileMatch) {
      const file = fileMatch[1] === state.token ? [...state.files.values()].find((f) => f.path === fileMatch[2]) : undefined;
      if (!file) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      res.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.bytes.byteLength });
      res.end(Buffer.from(file.bytes));
      return;
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    if (match[1] !== state.token) return sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const method = match[2]!;
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const body = await readBody(req);
    if (body.length > 0) {
      const type = req.headers['content-type'] ?? '';
      if (type.includes('application/json')) Object.assign(params, JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      else if (type.includes('multipart/form-data')) {
        const form = await new Response(body, { headers: { 'content-type': type } }).formData();
        for (const [key, value] of form) if (typeof value === 'string') params[key] = parseField(value);
      }
    }
    const call: FakeCall = { method, params, at: Date.now(), ...(via ? { via: via[1]! } : {}) };
    state.calls.push(call);
    state.events.emit('call');
    const aborted = new AbortController();
    res.on('close', () => {
      call.answeredAt = Date.now();
      aborted.abort();
    });
    if (!(await faults.released(method, aborted.signal))) return;
    const outcome = faults.takeFailure(method) ?? (await answerMethod(state, method, params, aborted.signal));
    if ('result' in outcome && (await faults.afterCall(method, call)) === 'lose') {
      // Committed, and the answer never leaves: the client sees the connection close (a network error).
      req.socket.destroy();
      return;
    }
    if ('result' in outcome) return sendJson(res, 200, { ok: true, result: outcome.result });
    return sendJson(res, outcome.code, {
      ok: false,
      error_code: outcome.code,
      description: outcome.description,
      ...(outcome.parameters ? { parameters: outcome.parameters } : {}),
    });
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});
    handle(req, res).catch((error: unknown) => sendJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: ${String(error)}` }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  let closing: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** grammY sends multipart fields as JSON-encoded strings for objects and numbers. */
function parseField(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}
