import type * as Undici from 'undici';

/**
 * The outgoing proxy (read from the environment by `src/config/env-proxy.ts`). The client takes these settings
 * explicitly, so they apply on every Node version, to model, MCP and Telegram calls alike.
 */
export interface ProxySettings {
  /** The proxy for `http:` URLs (and `https:` ones when `httpsProxy` is unset), e.g. `http://proxy:3128`. */
  readonly httpProxy?: string;
  /** The proxy for `https:` URLs, reached with CONNECT. */
  readonly httpsProxy?: string;
  /** Hosts reached directly: comma- or space-separated names, `.suffix`, `host:port`, or `*` for all. */
  readonly noProxy?: string;
}

/**
 * The HTTP client one Palaver calls out with: undici's `fetch` on one undici dispatcher — an `Agent` keeping
 * connections alive, or an `EnvHttpProxyAgent` when the config names an outgoing proxy. Its `fetch` is handed to the
 * clients that call out (the `openai` SDK for models, the MCP SDK for MCP servers and the identity directory, grammY
 * for the Bot API), so they share its connections; each Palaver has its own and closes it when it closes.
 */
export interface OutgoingHttp {
  readonly fetch: typeof fetch;
  /**
   * Closes the dispatcher's connections: idle ones now, busy ones once their answer is in (another caller may still
   * be finishing a call). A later call opens a new dispatcher.
   */
  close(): Promise<void>;
}

export interface OutgoingHttpOptions {
  /** The outgoing proxy (read from the environment by `src/config/env-proxy.ts`); without one, hosts are reached directly. */
  readonly proxy?: ProxySettings;
  /** How long to wait for a TCP (and TLS) connection. Default 10 s, undici's own. */
  readonly connectTimeoutMs?: number;
}

export function createOutgoingHttp(options: OutgoingHttpOptions = {}): OutgoingHttp {
  // undici loads with the first call out, not at start-up: a server reaches `/health` without it.
  let undici: Promise<typeof Undici> | undefined;
  let dispatcher: Undici.Dispatcher | undefined;
  const callOut = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const loaded = await (undici ??= import('undici'));
    dispatcher ??= createDispatcher(loaded, options);
    return (await loaded.fetch(input as Undici.RequestInfo, {
      ...(init as Undici.RequestInit),
      ...forUndici(loaded, init),
      dispatcher,
    })) as unknown as Response;
  };
  return {
    fetch: callOut as typeof fetch,
    close: async () => {
      const closing = dispatcher;
      dispatcher = undefined;
      await closing?.close();
    },
  };
}

/**
 * What callers hand over that undici's `fetch` would refuse or send otherwise than they meant:
 * - Node's global `FormData` is another copy of undici's class, which this one would send as text: it is copied into
 *   this undici's;
 * - a Node stream body (as grammY uploads a file) needs `duplex: 'half'`, which not every caller sets.
 */
function forUndici(undici: typeof Undici, init: RequestInit | undefined): Partial<Undici.RequestInit> {
  const adjusted: Partial<Undici.RequestInit> = {};
  const body = init?.body;
  if (body instanceof FormData) {
    const form = new undici.FormData();
    for (const [name, value] of body) form.append(name, value);
    adjusted.body = form;
  } else if (body instanceof ReadableStream || (typeof body === 'object' && body !== null && Symbol.asyncIterator in body)) {
    adjusted.duplex = 'half';
  }
  return adjusted;
}

function createDispatcher({ Agent, EnvHttpProxyAgent }: typeof Undici, options: OutgoingHttpOptions): Undici.Dispatcher {
  // Headers and body get no timeout of their own: each caller sets its deadline with its abort signal (model.timeoutMs
  // for a model call), and an MCP server's event stream may rightly stay silent for minutes.
  const settings = { connect: { timeout: options.connectTimeoutMs ?? 10_000 }, headersTimeout: 0, bodyTimeout: 0 };
  const { httpProxy, httpsProxy, noProxy } = options.proxy ?? {};
  if (!httpProxy && !httpsProxy) return new Agent(settings);
  // Given explicitly (empty for "none"), so that undici does not read the environment itself. An http: URL is
  // forwarded to an http: proxy as a plain request, as curl does (proxies often allow CONNECT only to port 443); an
  // https: URL goes through a CONNECT tunnel.
  return new EnvHttpProxyAgent({
    ...settings,
    httpProxy: httpProxy ?? '',
    httpsProxy: httpsProxy ?? '',
    noProxy: noProxy ?? '',
    proxyTunnel: false,
  } as Undici.EnvHttpProxyAgent.Options);
}
