import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { abortReason, reasonPhrase, toHeaderRecord } from './fetch-semantics.js';

/**
 * The plain wire: one `node:http(s)` request on a keep-alive agent for a call with a string or byte body (or none) on
 * a direct connection — every model call, MCP message and Bot API call but file uploads. Node's own HTTP client is
 * already loaded by the server, while undici's pool and WebAssembly parser cost each process 14–20 MB more resident
 * memory (BENCHMARKS.md, 2026-11-27 night), so the common case stays on it and undici is loaded only for a proxy or
 * a form or stream body.
 */
export function createNodeHttpAgents(): { readonly 'http:': HttpAgent; readonly 'https:': HttpsAgent } {
  // Sockets kept for the next call are unref'd by Node's agent, so an idle pool holds no process open.
  return { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };
}

/**
 * Closes the agents' connections as undici's `close` does: idle ones now, a busy one once its answer is in, so that
 * closing one Palaver never cuts a call another Palaver of the same process is making.
 */
export function closeNodeHttpAgents(agents: ReturnType<typeof createNodeHttpAgents>): void {
  for (const agent of [agents['http:'], agents['https:']]) {
    agent.on('free', (socket: { destroy(): void }) => socket.destroy());
    for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  }
}

export function sendWithNodeHttp(url: URL, init: RequestInit, body: string | Uint8Array | undefined, agent: HttpAgent): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const method = (init.method ?? 'GET').toUpperCase();
  const headers = toHeaderRecord(init.headers);
  if (body !== undefined && headers['content-length'] === undefined) headers['content-length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  headers['accept-encoding'] ??= 'identity';
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
  if (headers.get('content-type')?.includes('text/event-stream')) {
    return new Response(Readable.toWeb(response) as ReadableStream<Uint8Array>, init);
  }
  const bytes = await readWhole(response).catch((error: unknown) => {
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

