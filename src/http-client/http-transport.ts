import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { pipeline, Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { nodeUsesEnvProxy } from '../config/env-proxy.js';

/**
 * The `fetch` Palaver hands the SDKs it calls out with (the `openai` SDK for model endpoints, the MCP SDK for MCP
 * servers): one request over `node:http(s)` with keep-alive connections, answered as a standard `Response`.
 *
 * Why not the global `fetch`: undici's WHATWG fetch builds a Request, a Headers list and web streams for every body
 * both ways. Measured under the turn benchmark, that was about 0.3 ms of CPU per model call on the turn's thread,
 * more than Palaver's own work around the call. The SDKs keep everything else they do (retries with backoff,
 * timeouts, error types, streaming); only the wire under them changes.
 *
 * What it does like `fetch`: keep-alive pooling, `content-length` for string and byte bodies, gzip/deflate/br bodies
 * decoded, the caller's `AbortSignal` (before and during the response), a network failure rejected as a `TypeError`
 * whose `cause` is the socket's error. What it does differently: a JSON or text answer is read whole before the
 * promise resolves (the SDKs read it whole anyway, and so their timeouts cover the body too); an event stream
 * (`text/event-stream`) is handed over as it arrives. Redirects are not followed (the caller sees the 3xx, as with
 * `redirect: 'manual'`). Anything it was not made for — a `Request` object, a form or stream body, a scheme other
 * than http(s) — goes to the global `fetch` unchanged.
 */
export interface HttpTransport {
  readonly fetch: typeof fetch;
  /** Closes the pooled connections (the pool never keeps the process alive by itself). */
  close(): void;
}

let shared: HttpTransport | undefined;

/**
 * The process's transport: clients calling the same host share its pooled connections. When Node was told to use
 * the proxy in HTTP(S)_PROXY (`NODE_USE_ENV_PROXY=1`), which it applies to its own global fetch and agents but not to
 * this pool, it is the global fetch, so that requests keep going through the proxy.
 */
export function sharedHttpTransport(): HttpTransport {
  return (shared ??= createHttpTransport({ globalFetch: nodeUsesEnvProxy() }));
}

export function createHttpTransport(options: { readonly globalFetch?: boolean } = {}): HttpTransport {
  if (options.globalFetch) return { fetch: (input, init) => globalThis.fetch(input, init), close: () => {} };
  // Sockets kept for the next call are unref'd by Node's agent, so an idle pool holds no process open.
  const agents = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
  const transportFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    const body = init?.body;
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || !(body == null || typeof body === 'string' || body instanceof Uint8Array)) {
      return globalThis.fetch(input, init);
    }
    return send(url, init ?? {}, body ?? undefined, agents[url.protocol]);
  };
  return {
    fetch: transportFetch as typeof fetch,
    close: () => {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

function send(url: URL, init: RequestInit, body: string | Uint8Array | undefined, agent: HttpAgent): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const method = (init.method ?? 'GET').toUpperCase();
  const headers = toHeaderRecord(init.headers);
  if (body !== undefined && headers['content-length'] === undefined) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  return new Promise<Response>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, headers, agent, ...(signal ? { signal } : {}) }, (response) => {
      receive(response, method, signal).then(resolve, reject);
    });
    request.on('error', (error) => reject(signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: error })));
    request.end(body);
  });
}

/** The response as a standard `Response`: read whole, or, for an event stream, passed on as it arrives. */
async function receive(response: IncomingMessage, method: string, signal: AbortSignal | undefined): Promise<Response> {
  const status = response.statusCode ?? 0;
  const headers = new Headers();
  const raw = response.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const init: ResponseInit = { status, statusText: reasonPhrase(response.statusMessage), headers };
  // These statuses carry no body, and `Response` refuses one for them.
  if (method === 'HEAD' || status === 204 || status === 205 || status === 304) {
    response.resume();
    return new Response(null, init);
  }
  const decoded = decode(response, headers.get('content-encoding'));
  if (decoded !== response) {
    // The body is no longer in the encoding the headers describe.
    headers.delete('content-encoding');
    headers.delete('content-length');
  }
  if (headers.get('content-type')?.includes('text/event-stream')) {
    return new Response(Readable.toWeb(decoded) as ReadableStream<Uint8Array>, init);
  }
  const bytes = await readWhole(decoded).catch((error: unknown) => {
    throw signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: error });
  });
  return new BufferedResponse(bytes, init) as unknown as Response;
}

/** The whole body, with plain stream events: an async iterator per answer cost more than the reading. */
function readWhole(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    stream.once('error', reject);
    // A socket closed before the end of the body ends the response without an error of its own.
    stream.once('close', () => {
      if (!stream.readableEnded) reject(new Error('the connection closed before the answer was complete'));
    });
  });
}

// The DOM typings declare Response's members as properties, which a subclass may not define as methods or accessors;
// the class is therefore typed against a bare constructor, and is a real Response at run time.
const ResponseBase = Response as unknown as new (body: null, init: ResponseInit) => { readonly headers: Headers; readonly status: number; readonly statusText: string };

/**
 * A `Response` whose body is already in memory. `text()` and `json()` read the bytes directly: a standard `Response`
 * copies them into a web stream first, which took more CPU per model call than the rest of this transport. `body`
 * is still a `ReadableStream` for whoever asks (made then).
 */
class BufferedResponse extends ResponseBase {
  readonly #bytes: Buffer;
  #used = false;
  #stream: ReadableStream<Uint8Array> | null | undefined;

  constructor(bytes: Buffer, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  /** The bytes, once: a body is read at most once, as with any `Response`. */
  #take(): Buffer {
    if (this.bodyUsed) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    return this.#bytes;
  }

  get body(): ReadableStream<Uint8Array> | null {
    return (this.#stream ??= new Response(this.#bytes).body);
  }

  get bodyUsed(): boolean {
    return this.#used || this.#stream?.locked === true;
  }

  text(): Promise<string> {
    try {
      const bytes = this.#take();
      // As fetch does, a UTF-8 byte order mark is not part of the text.
      const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      return Promise.resolve(bytes.toString('utf8', start));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.#take();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async blob(): Promise<Blob> {
    return new Blob([this.#take()], { type: this.headers.get('content-type') ?? '' });
  }

  clone(): Response {
    if (this.bodyUsed) throw new TypeError('Response.clone: Body has already been consumed.');
    return new BufferedResponse(this.#bytes, { status: this.status, statusText: this.statusText, headers: this.headers }) as unknown as Response;
  }
}

function decode(response: IncomingMessage, encoding: string | null): Readable {
  const decoder = decoderFor(encoding);
  // pipeline, not pipe: a response cut off (or aborted) mid-body fails the decoded stream too.
  return decoder ? pipeline(response, decoder, () => {}) : response;
}

function decoderFor(encoding: string | null): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/** `Response` refuses a status text outside HTTP's reason-phrase characters; fetch keeps such an answer, so does this. */
function reasonPhrase(text: string | undefined): string {
  return text !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(text) ? text : '';
}

function toHeaderRecord(headers: RequestInit['headers']): OutgoingHttpHeaders {
  const record: Record<string, string> = {};
  if (headers === undefined) return record;
  if (headers instanceof Headers) {
    headers.forEach((value, name) => {
      record[name] = value;
    });
  } else if (Array.isArray(headers)) {
    for (const [name, value] of headers) record[name!.toLowerCase()] = value!;
  } else {
    for (const [name, value] of Object.entries(headers as Record<string, string>)) record[name.toLowerCase()] = value;
  }
  return record;
}

/** What `fetch` rejects with when aborted: the signal's reason, else a DOMException named AbortError. */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
