import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type * as Undici from 'undici';
import type { HttpTransportOptions } from './http-transport.js';
import { abortReason, reasonPhrase, toHeaderRecord } from './fetch-semantics.js';

// undici (CommonJS) is required when first needed, not when a model or channel module is imported.
const require = createRequire(import.meta.url);

/**
 * undici's `request` on a keep-alive pool, through the configured proxy when there is one, answered as a standard
 * `Response`: the wire for calls behind a proxy and for bodies the plain wire does not send (forms, streams such as
 * grammY's file uploads).
 */
export function createUndiciPool(options: HttpTransportOptions): Dispatcher {
  const { Agent, EnvHttpProxyAgent } = require('undici') as typeof Undici;
  // Headers and body get no timeout of their own: each caller sets its deadline with its abort signal (model.timeoutMs
  // for a model call), and an MCP server's event stream may rightly stay silent for minutes.
  const settings = { connect: { timeout: options.connectTimeoutMs ?? 10_000 }, headersTimeout: 0, bodyTimeout: 0 };
  const { httpProxy, httpsProxy, noProxy } = options.proxy ?? {};
  // Given explicitly (empty for "none"), so that undici does not read the environment itself.
  // An http: URL is forwarded to an http: proxy as a plain request, as curl does (proxies often allow CONNECT only to
  // port 443); an https: URL goes through a CONNECT tunnel.
  return httpProxy || httpsProxy
    ? new EnvHttpProxyAgent({ ...settings, httpProxy: httpProxy ?? '', httpsProxy: httpsProxy ?? '', noProxy: noProxy ?? '', proxyTunnel: false } as Undici.EnvHttpProxyAgent.Options)
    : new Agent(settings);
}

export async function sendWithUndici(dispatcher: Dispatcher, url: URL, init: RequestInit): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError('fetch failed', { cause: new Error(`unsupported URL scheme ${url.protocol}`) });
  const method = (init.method ?? 'GET').toUpperCase();
  const headers = toHeaderRecord(init.headers);
  headers['accept-encoding'] ??= 'identity';
  let body = init.body ?? undefined;
  if (body instanceof URLSearchParams || body instanceof FormData) {
    // Encoded as fetch encodes them (a form as multipart with a fresh boundary), then sent as a stream.
    const encoded = new Response(body);
    headers['content-type'] ??= encoded.headers.get('content-type')!;
    body = encoded.body!;
  }
  const failed = (error: unknown): unknown => (signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: error }));
  let answer: Dispatcher.ResponseData;
  try {
    answer = await dispatcher.request({ origin: url.origin, path: `${url.pathname}${url.search}`, method: method as Dispatcher.HttpMethod, headers, body: body as Dispatcher.DispatchOptions['body'], signal: signal ?? null });
  } catch (error) {
    throw failed(error);
  }
  const status = answer.statusCode;
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const each of value) responseHeaders.append(name, each);
    else if (value !== undefined) responseHeaders.append(name, value);
  }
  const responseInit: ResponseInit = { status, statusText: reasonPhrase(answer.statusText), headers: responseHeaders };
  // These statuses carry no body, and `Response` refuses one for them.
  if (method === 'HEAD' || status === 204 || status === 205 || status === 304) {
    await answer.body.dump();
    return new Response(null, responseInit);
  }
  if (responseHeaders.get('content-type')?.includes('text/event-stream')) {
    return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, responseInit);
  }
  const bytes = await answer.body.bytes().catch((error: unknown) => {
    throw failed(error);
  });
  return new Response(bytes, responseInit);
}
