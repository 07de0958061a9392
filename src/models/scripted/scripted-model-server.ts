import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatCompletionBody, chatCompletionStream, parseChatRequest } from './scripted-chat-wire.js';
import type { ModelScript, ScriptedCall, ScriptedReply } from './scripted-model.js';
import { parseResponsesRequest, previousResponseNotFound, renderResponse, ResponseChainStore, responseStream } from './scripted-responses-wire.js';

export interface ScriptedModelServerOptions {
  /** Decides every answer. Swap it later with `setScript`. */
  readonly script: ModelScript;
  /** Default 0: a free port. */
  readonly port?: number;
  /** Default `127.0.0.1`. */
  readonly host?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`; others get OpenAI's 401, which echoes the key. */
  readonly apiKey?: string;
  /** Model ids listed by `GET /v1/models`. Default `['scripted-model']`. */
  readonly models?: readonly string[];
  /** Keep at most this many `calls` (oldest dropped), so a long benchmark stays flat. Default 10 000. */
  readonly maxRecordedCalls?: number;
  /** Remember at most this many stored responses for `previous_response_id`. Default 10 000. */
  readonly maxStoredResponses?: number;
  /** Answers `POST /v1/audio/transcriptions`; without it that route is 404. Swap it later with `setTranscriptionScript`. */
  readonly transcription?: TranscriptionScript;
  /**
   * Told, for each answered model request, when it arrived and when the first byte of its answer went out
   * (`performance.now()` of this process): what the model's own time to first byte was, for latency benchmarks.
   */
  readonly onAnswered?: (call: ScriptedCall, timing: ModelTiming) => void;
}

/** When a model request arrived and its answer's first byte went out, `performance.now()` of the server's process. */
export interface ModelTiming {
  readonly receivedAt: number;
  readonly firstByteAt: number;
}

/** One audio file the server was asked to transcribe (multipart form fields of OpenAI's `/audio/transcriptions`). */
export interface TranscriptionCall {
  readonly model: string;
  readonly filename: string;
  readonly mimeType: string;
  readonly audio: Uint8Array;
  readonly language: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

/** The transcript to return, or an HTTP error. */
export type TranscriptionReply =
  | { readonly text: string }
  | {
      readonly error: {
        readonly status: number;
        readonly message: string;
        /** Sent as `retry-after-ms`, which the SDK honours; keeps retry tests fast. */
        readonly retryAfterMs?: number;
      };
    };

/** Decides each transcription; may be async (a slow script provokes client timeouts). */
export type TranscriptionScript = (call: TranscriptionCall) => TranscriptionReply | Promise<TranscriptionReply>;

export interface ScriptedModelServer {
  /** E.g. `http://127.0.0.1:PORT/v1`: use it as `model.baseUrl`. */
  readonly baseUrl: string;
  /** Every request the script answered, oldest first. (A stale `previous_response_id` is refused before the script.) */
  readonly calls: ScriptedCall[];
  /** Every `/audio/transcriptions` request, oldest first (at most `maxRecordedCalls`). */
  readonly transcriptions: TranscriptionCall[];
  setScript(script: ModelScript): void;
  setTranscriptionScript(script: TranscriptionScript | undefined): void;
  /** Forgets a stored response, so continuing from it answers `previous_response_not_found`. */
  forgetResponse(id: string): boolean;
  /** Stops listening and drops open connections. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * A real HTTP server speaking OpenAI's wire format — `POST /v1/chat/completions`, `POST /v1/responses` (JSON and
 * SSE) and `GET /v1/models` — whose answers come from a script. Used by tests, the demo and the benchmark, so it
 * logs nothing per request and keeps connections alive.
 *
 * @example
 * const server = await startScriptedModelServer({ script: sequenceScript([{ text: 'Hello!' }]) });
 * const model = new OpenAIChatProvider({ provider: 'openai-chat', name: 'scripted-model', baseUrl: server.baseUrl, timeoutMs: 5_000, maxRetries: 0 });
 * // … then `await server.close()`
 */
export async function startScriptedModelServer(options: ScriptedModelServerOptions): Promise<ScriptedModelServer> {
  let script = options.script;
  const calls: ScriptedCall[] = [];
  const maxRecordedCalls = options.maxRecordedCalls ?? 10_000;
  const chains = new ResponseChainStore(options.maxStoredResponses ?? 10_000);
  const models = options.models ?? ['scripted-model'];
  let transcription = options.transcription;
  const transcriptions: TranscriptionCall[] = [];

  const record = (call: ScriptedCall): void => {
    if (calls.length >= maxRecordedCalls) calls.shift();
    calls.push(call);
  };

  async function handle(req: IncomingMessage, res: ServerResponse, receivedAt: number): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]?.replace(/\/+$/, '') ?? '';
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      return sendJson(res, 401, {
        error: { message: `Incorrect API key provided: ${given}.`, type: 'invalid_request_error', code: 'invalid_api_key', param: null },
      });
    }
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'palaver' })) });
    }
    if (req.method === 'POST' && path === '/v1/audio/transcriptions' && transcription) return transcribe(req, res, transcription);
    if (req.method !== 'POST' || (path !== '/v1/chat/completions' && path !== '/v1/responses')) {
      return sendJson(res, 404, { error: { message: `No route ${req.method} ${path}.`, type: 'invalid_request_error', code: null, param: null } });
    }
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(await readBody(req));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return sendJson(res, 400, { error: { message: 'The request body is not a JSON object.', type: 'invalid_request_error', code: null, param: null } });
    }
    const headers = flattenHeaders(req);

    if (path === '/v1/chat/completions') {
      const call = parseChatRequest(body, headers);
      const reply = await answer(call, res);
      if (!reply) return;
      const payload = call.stream ? chatCompletionStream(call, reply) : undefined;
      answered(call, receivedAt);
      if (payload !== undefined) return sendSse(res, payload, reply.cutStreamAfterEvents, reply.streamGapMs);
      return sendJson(res, 200, chatCompletionBody(call, reply));
    }

    const previousId = typeof body['previous_response_id'] === 'string' ? body['previous_response_id'] : undefined;
    const chain = previousId ? chains.get(previousId) : [];
    if (!chain) return sendJson(res, 400, previousResponseNotFound(previousId ?? ''));
    const call = parseResponsesRequest(body, headers, chain);
    const reply = await answer(call, res);
    if (!reply) return;
    const { response, chainItems } = renderResponse(call, reply);
    if (body['store'] !== false) chains.set(String(response['id']), chainItems);
    const payload = call.stream ? responseStream(response) : undefined;
    answered(call, receivedAt);
    if (payload !== undefined) return sendSse(res, payload, undefined, reply.streamGapMs);
    return sendJson(res, 200, response);
  }

  /** Reports the request's timing; called right before the answer's first byte is written. */
  function answered(call: ScriptedCall, receivedAt: number): void {
    options.onAnswered?.(call, { receivedAt, firstByteAt: performance.now() });
  }

  /** `POST /v1/audio/transcriptions`: a multipart form with `file` and `model` (and `language`); answers `{ text }`. */
  async function transcribe(req: IncomingMessage, res: ServerResponse, script: TranscriptionScript): Promise<void> {
    const body = await readBytes(req);
    let form: FormData;
    try {
      form = await new Response(body, { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
    } catch {
      return sendJson(res, 400, { error: { message: 'Expected a multipart/form-data body.', type: 'invalid_request_error', code: null, param: null } });
    }
    const file = form.get('file');
    const model = form.get('model');
    if (!(file instanceof Blob) || typeof model !== 'string') {
      return sendJson(res, 400, { error: { message: 'The form needs `file` and `model`.', type: 'invalid_request_error', code: null, param: 'file' } });
    }
    const language = form.get('language');
    const call: TranscriptionCall = {
      model,
      filename: file instanceof File ? file.name : 'audio',
      mimeType: file.type,
      audio: new Uint8Array(await file.arrayBuffer()),
      language: typeof language === 'string' ? language : undefined,
      headers: flattenHeaders(req),
    };
    if (transcriptions.length >= maxRecordedCalls) transcriptions.shift();
    transcriptions.push(call);
    const answer = await script(call);
    if ('error' in answer) {
      const { status, message, retryAfterMs } = answer.error;
      return sendJson(
        res,
        status,
        { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null, param: null } },
        retryAfterMs !== undefined ? { 'retry-after-ms': String(retryAfterMs) } : {},
      );
    }
    return sendJson(res, 200, { text: answer.text });
  }

  /** Runs the script; answers errors itself and returns undefined when the response is already settled. */
  async function answer(call: ScriptedCall, res: ServerResponse): Promise<ScriptedReply | undefined> {
    record(call);
    let reply: ScriptedReply;
    try {
      reply = await script(call);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      sendJson(res, 500, { error: { message: `The script threw: ${message}`, type: 'server_error', code: null, param: null } });
      return undefined;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (reply.error) {
      const { status, message, code, retryAfterMs } = reply.error;
      sendJson(
        res,
        status,
        { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code: code ?? null, param: null } },
        retryAfterMs !== undefined ? { 'retry-after-ms': String(retryAfterMs) } : {},
      );
      return undefined;
    }
    return reply;
  }

  const server = createServer((req, res) => {
    const receivedAt = performance.now();
    // A client that timed out may be gone before we answer; writing then must not crash the server.
    res.on('error', () => {});
    handle(req, res, receivedAt).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      sendJson(res, 500, { error: { message, type: 'server_error', code: null, param: null } });
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    baseUrl: `http://${host}:${address.port}/v1`,
    calls,
    transcriptions,
    setScript(next) {
      script = next;
    },
    setTranscriptionScript(next) {
      transcription = next;
    },
    forgetResponse: (id) => chains.delete(id),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function readBytes(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...extraHeaders });
  res.end(payload);
}

/** An SSE event with text in it: a Chat `content` or a Responses `delta` that is not empty. */
const FIRST_TEXT = /"(?:content|delta)":"[^"]/;

function sendSse(res: ServerResponse, payload: string, cutAfterEvents?: number, gapMs?: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  if (cutAfterEvents === undefined && !gapMs) {
    res.end(payload);
    return;
  }
  // A stream that breaks half-way, as a model gateway's connection can: the first events, then the socket closes.
  const events = payload
    .split('\n\n')
    .filter((event) => event !== '')
    .slice(0, cutAfterEvents);
  const finish = (): void => {
    if (cutAfterEvents === undefined) res.end();
    else res.destroy();
  };
  if (!gapMs) {
    res.write(events.map((event) => `${event}\n\n`).join(''), finish);
    return;
  }
  // One event at a time, `gapMs` apart. The first write goes out now and carries everything up to the first words
  // (Chat's role-only chunk, the Responses API's opening events), so the first byte is the first text.
  const firstText = events.findIndex((event) => FIRST_TEXT.test(event));
  const start = Math.max(0, firstText);
  const next = (index: number, preamble = ''): void => {
    if (res.destroyed) return;
    if (index >= events.length) {
      finish();
      return;
    }
    res.write(`${preamble}${events[index]}\n\n`);
    setTimeout(next, gapMs, index + 1);
  };
  next(
    start,
    events
      .slice(0, start)
      .map((event) => `${event}\n\n`)
      .join(''),
  );
}
