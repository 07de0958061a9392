import { HostCheck } from '../../platform/host-check.js';

export interface RequestGuardOptions {
  /**
   * Origins (`https://shop.example`) of other sites whose browsers may call the channel's API routes; they get
   * CORS headers. The page's own origin (the request's `Host`) needs no entry.
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * Host names (`chat.example.com`, or `chat.example.com:8443` for one port) served besides loopback names, IP
   * addresses and `serverHost`.
   */
  readonly allowedHosts?: readonly string[];
  /** `server.host`: a name the server was told to bind is its own (wildcards `0.0.0.0` / `::` add nothing). */
  readonly serverHost?: string;
}

/** A refused request: the status, a stable code and a message that says what to change. */
export interface Refusal {
  readonly status: 400 | 403 | 415 | 421;
  readonly code: string;
  readonly message: string;
}

export type GuardResult = { readonly ok: true; readonly cors: Record<string, string> } | ({ readonly ok: false } & Refusal);

/** Headers a cross-origin caller may send; `authorization` is not among them (browsers never hold the API key). */
const CORS_ALLOW_HEADERS = 'content-type, x-palaver-user-token, x-correlation-id, accept-language';

/**
 * Same-origin rules for the web channel's routes, checked before anything is read or stored:
 *
 * - **Host.** The `Host` must be a loopback name (`localhost`, `*.localhost`), an IP address, `serverHost`, or an
 *   entry of `allowedHosts`; another name is a DNS-rebinding attempt (a foreign site whose name now points here) and
 *   gets 421 `misdirected_host`. IP addresses are safe: rebinding needs a name the attacker controls.
 * - **Origin.** When present it must be the request's own origin (same host and port as `Host`) or one of
 *   `allowedOrigins`; anything else, `null` included, gets 403 `cross_origin`. Without `Origin`, a browser's
 *   `Sec-Fetch-Site: cross-site | same-site` gets the same 403 (a page on another port of localhost is same-site,
 *   and refused).
 * - **Content type.** Writes must be `application/json` (415 `unsupported_media_type`): an HTML form can only send
 *   `text/plain`, `multipart/form-data` or `application/x-www-form-urlencoded`, and `fetch(…, { mode: 'no-cors' })`
 *   cannot send JSON either.
 * - **CORS.** Only an allowed foreign origin gets `Access-Control-Allow-Origin` (never with credentials), and only
 *   it passes a preflight.
 */
export class RequestGuard {
  readonly #origins: ReadonlySet<string>;
  readonly #hosts: HostCheck;

  constructor(options: RequestGuardOptions = {}) {
    this.#origins = new Set((options.allowedOrigins ?? []).map((origin) => new URL(origin).origin));
    this.#hosts = new HostCheck({
      ...(options.allowedHosts ? { allowedHosts: options.allowedHosts } : {}),
      ...(options.serverHost === undefined ? {} : { serverHost: options.serverHost }),
    });
  }

  /** Only the `Host` check: for the page and its assets. */
  checkHost(request: Request): Refusal | undefined {
    const host = requestHost(request);
    if (this.#hosts.allows(host)) return undefined;
    return {
      status: 421,
      code: 'misdirected_host',
      message: `This server does not answer to the host ${JSON.stringify(host ?? '')}; add it to channels.web.allowedHosts if it is this server's name.`,
    };
  }

  /** Every check for an API route: `write` also requires a JSON body. */
  check(request: Request, kind: 'read' | 'write'): GuardResult {
    const host = this.checkHost(request);
    if (host) return { ok: false, ...host };
    const origin = this.#checkOrigin(request);
    if (!origin.ok) return origin;
    if (kind === 'write' && !isJson(request.headers.get('content-type'))) {
      return {
        ok: false,
        status: 415,
        code: 'unsupported_media_type',
        message: 'Send the body as JSON with "content-type: application/json".',
      };
    }
    return origin;
  }

  /** The answer to a CORS preflight (`OPTIONS`): 204 with CORS headers for an allowed origin, 403 otherwise. */
  preflight(request: Request): Response {
    const host = this.checkHost(request);
    if (host) return errorResponse(host);
    const origin = request.headers.get('origin');
    const allowed = origin !== null && this.#origins.has(normaliseOrigin(origin) ?? '');
    if (!allowed) {
      return errorResponse({ status: 403, code: 'cross_origin', message: 'This origin may not call this server; add it to channels.web.allowedOrigins.' });
    }
    return new Response(null, {
      status: 204,
      headers: {
        ...corsHeaders(origin),
        'access-control-allow-methods': 'GET, POST',
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': '600',
      },
    });
  }

  #checkOrigin(request: Request): GuardResult {
    const origin = request.headers.get('origin');
    if (origin !== null) {
      const normalised = normaliseOrigin(origin);
      if (normalised !== undefined && this.#origins.has(normalised)) return { ok: true, cors: corsHeaders(origin) };
      const own = requestHost(request);
      if (normalised !== undefined && own !== undefined && hostOfOrigin(normalised) === stripDefaultPort(own, normalised)) return { ok: true, cors: {} };
      return crossOrigin(origin);
    }
    const site = request.headers.get('sec-fetch-site');
    if (site === 'cross-site' || site === 'same-site') return crossOrigin(`a ${site} page`);
    return { ok: true, cors: {} };
  }
}

/**
 * True when the request comes from a browser's page (`Origin`, which browsers send with every POST and every
 * cross-origin request, or `Sec-Fetch-Site`): never a server client. (`Sec-Fetch-Mode` alone is not a sign:
 * Node's own fetch sends it.)
 */
export function isBrowserRequest(request: Request): boolean {
  return request.headers.has('origin') || request.headers.has('sec-fetch-site');
}

/** `{ error: { code, message } }` with the refusal's status. */
export function errorResponse(refusal: Refusal | { status: number; code: string; message: string }, headers: Record<string, string> = {}): Response {
  return Response.json({ error: { code: refusal.code, message: refusal.message } }, { status: refusal.status, headers });
}

function crossOrigin(from: string): GuardResult {
  return {
    ok: false,
    status: 403,
    code: 'cross_origin',
    message: `Requests from ${from.slice(0, 200)} are refused: only this server's own page, or an origin in channels.web.allowedOrigins, may call it.`,
  };
}

function corsHeaders(origin: string): Record<string, string> {
  return { 'access-control-allow-origin': origin, vary: 'Origin', 'access-control-expose-headers': 'x-correlation-id' };
}

/** The `Host` of a request, lower-case; from the URL when the header is missing. */
function requestHost(request: Request): string | undefined {
  const header = request.headers.get('host');
  if (header !== null) return header.trim().toLowerCase();
  try {
    return new URL(request.url).host.toLowerCase();
  } catch {
    return undefined;
  }
}

function normaliseOrigin(origin: string): string | undefined {
  try {
    const url = new URL(origin);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

function hostOfOrigin(origin: string): string {
  return new URL(origin).host;
}

/** `Host: example.com:443` for an https origin is `example.com`, as the origin spells it. */
function stripDefaultPort(host: string, origin: string): string {
  const port = origin.startsWith('https:') ? ':443' : ':80';
  return host.endsWith(port) ? host.slice(0, -port.length) : host;
}

function isJson(contentType: string | null): boolean {
  if (contentType === null) return false;
  return contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
}
