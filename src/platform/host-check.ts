import { isIP } from 'node:net';
import type { MiddlewareHandler } from 'hono';
import { errorBody } from './error-body.js';

export interface HostCheckOptions {
  /**
   * Host names (`chat.example.com`, or `chat.example.com:8443` for one port) served besides loopback names, IP
   * addresses and `serverHost`.
   */
  readonly allowedHosts?: readonly string[];
  /** `server.host`: a name the server was told to bind is its own (wildcards `0.0.0.0` / `::` add nothing). */
  readonly serverHost?: string;
}

/**
 * The DNS-rebinding rule: a request's `Host` must be a loopback name (`localhost`, `*.localhost`), an IP address,
 * `serverHost`, or an entry of `allowedHosts`. Another name is a foreign site whose name now points here, whose
 * pages the browser treats as same-origin with this server. IP addresses are safe: rebinding needs a name the
 * attacker controls.
 */
export class HostCheck {
  readonly #hosts: ReadonlySet<string>;
  readonly #serverHost: string | undefined;

  constructor(options: HostCheckOptions = {}) {
    this.#hosts = new Set((options.allowedHosts ?? []).map((host) => host.toLowerCase()));
    const serverHost = options.serverHost?.toLowerCase();
    this.#serverHost = serverHost === undefined || serverHost === '' || serverHost === '0.0.0.0' || serverHost === '::' ? undefined : serverHost;
  }

  /** True when `host` (a `Host` header, `name[:port]`, any case) names this server. */
  allows(host: string | undefined): boolean {
    if (host === undefined) return false;
    const lower = host.trim().toLowerCase();
    if (this.#hosts.has(lower)) return true;
    const name = hostName(lower);
    if (name === undefined) return false;
    if (this.#hosts.has(name)) return true;
    if (name === 'localhost' || name.endsWith('.localhost')) return true;
    if (isIP(name.replace(/^\[|\]$/g, '')) !== 0) return true;
    return this.#serverHost !== undefined && (name === this.#serverHost || lower === this.#serverHost);
  }
}

/**
 * Guards the server's own routes (`/health`, `/metrics`) with the `Host` rule: 421 `misdirected_host` for a name this
 * server was not told is its own. Without it a page on a rebound name could read them through the visitor's browser,
 * since without an API key loopback clients are all these routes ask for.
 */
export function hostGuard(options: HostCheckOptions): MiddlewareHandler {
  const check = new HostCheck(options);
  return async (c, next) => {
    const host = c.req.header('host') ?? safeUrlHost(c.req.url);
    if (check.allows(host)) return next();
    return c.json(
      errorBody(
        'misdirected_host',
        `This server does not answer to the host ${JSON.stringify((host ?? '').slice(0, 200))}; add it to server.allowedHosts if it is this server's name.`,
      ),
      421,
    );
  };
}

/** `localhost:3000` → `localhost`, `[::1]:3000` → `[::1]`; undefined when malformed. */
function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host);
  return match?.[1];
}

function safeUrlHost(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
