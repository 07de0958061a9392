import type { Dispatcher } from 'undici';
import type { ProxySettings } from '../config/env-proxy.js';
import { proxySettingsFromEnv } from '../config/env-proxy.js';
import { closeNodeHttpAgents, createNodeHttpAgents, sendWithNodeHttp } from './node-http-wire.js';
import { createUndiciPool, sendWithUndici } from './undici-wire.js';

/**
 * The `fetch` Palaver hands the clients it calls out with (the `openai` SDK for model endpoints, the MCP SDK for MCP
 * servers, grammY for the Bot API), answered as a standard `Response`. Two wires under it:
 * - a call with a string or byte body (or none) on a direct connection, which is every model call, MCP message and
 *   Bot API call but file uploads, goes out as one `node:http(s)` request on a keep-alive agent
 *   (`node-http-wire.ts`);
 * - a call through the configured proxy, or with a form or stream body, goes through undici's `request` on its pool
 *   (`undici-wire.ts`), undici being loaded then. undici would serve every call at the same CPU, but its pool and
 *   WebAssembly parser cost each process 14–20 MB more resident memory than Node's own HTTP client, which the server
 *   has loaded anyway (measured side by side, BENCHMARKS.md, 2026-11-27 night).
 *
 * Why not a WHATWG `fetch` (Node's global one or undici's): it builds a Request, a Headers list and web streams for
 * every body both ways, which cost more CPU per model call than Palaver's own work around the call. The clients keep
 * everything else they do (retries with backoff, timeouts, error types, streaming).
 *
 * What it does as `fetch` does: string, byte, form, blob and stream bodies; the caller's `AbortSignal` (before and
 * during the answer; the call rejects with the signal's reason); a network failure rejected as
 * `TypeError('fetch failed')` whose `cause` is the socket's error. What it does differently: it asks for answers
 * without compression (`accept-encoding: identity`, unless the caller names encodings), which spares decoding them; a
 * JSON or text answer is read whole before the promise resolves (the clients read it whole anyway, and so their
 * timeouts cover the body too); an event stream (`text/event-stream`) is handed over as it arrives. Redirects are not
 * followed (the caller sees the 3xx, as with `redirect: 'manual'`).
 */
export interface HttpTransport {
  readonly fetch: typeof fetch;
  /**
   * Closes the pooled connections: idle ones now, busy ones once their answer is in. The transport stays usable; a
   * later call opens new ones. (Idle connections never keep the process alive by themselves.)
   */
  close(): Promise<void>;
}

export interface HttpTransportOptions {
  /** The outgoing proxy; without one, every host is reached directly. */
  readonly proxy?: ProxySettings;
  /** How long undici's wire waits for a TCP (and TLS) connection. Default 10 s, as undici's. */
  readonly connectTimeoutMs?: number;
}

let shared: HttpTransport | undefined;

/**
 * The process's transport: clients calling the same host share its pooled connections, and it goes through the
 * proxy the environment names (read by the config module). Palaver closes its pool when it closes.
 */
export function sharedHttpTransport(): HttpTransport {
  return (shared ??= createHttpTransport({ proxy: proxySettingsFromEnv() }));
}

/** Closes the process transport's pool, if one was made (Palaver's `close()`). */
export async function closeSharedHttpTransport(): Promise<void> {
  await shared?.close();
}

export function createHttpTransport(options: HttpTransportOptions = {}): HttpTransport {
  const proxied = Boolean(options.proxy?.httpProxy || options.proxy?.httpsProxy);
  let agents: ReturnType<typeof createNodeHttpAgents> | undefined;
  let pool: Dispatcher | undefined;
  const send = (url: URL, init: RequestInit): Promise<Response> => {
    const body = init.body;
    const plain = body == null || typeof body === 'string' || body instanceof Uint8Array;
    if (!proxied && plain && (url.protocol === 'http:' || url.protocol === 'https:')) {
      agents ??= createNodeHttpAgents();
      return sendWithNodeHttp(url, init, body ?? undefined, agents[url.protocol]);
    }
    return sendWithUndici((pool ??= createUndiciPool(options)), url, init);
  };
  const transportFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (typeof input === 'string' || input instanceof URL) return send(new URL(input), init ?? {});
    // A Request object: its parts, with `init` taking precedence as in fetch.
    const { url, method, headers, body, signal } = input;
    return send(new URL(url), { method, headers, body, signal, ...init });
  };
  return {
    fetch: transportFetch as typeof fetch,
    close: async () => {
      const [closingAgents, closingPool] = [agents, pool];
      agents = undefined;
      pool = undefined;
      if (closingAgents) closeNodeHttpAgents(closingAgents);
      await closingPool?.close();
    },
  };
}
