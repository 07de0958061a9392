import { ConfigError } from '../domain/errors.js';

/**
 * The outgoing proxy, as the environment names it (HTTP_PROXY, HTTPS_PROXY, NO_PROXY; the lower-case names first,
 * as curl and undici read them). Palaver's outgoing HTTP client takes these settings explicitly (see
 * `src/outgoing-http/outgoing-http.ts`), so they apply on every Node version, to model, MCP and Telegram calls alike.
 */
export interface ProxySettings {
  /** The proxy for `http:` URLs (and `https:` ones when `httpsProxy` is unset), e.g. `http://proxy:3128`. */
  readonly httpProxy?: string;
  /** The proxy for `https:` URLs, reached with CONNECT. */
  readonly httpsProxy?: string;
  /** Hosts reached directly: comma- or space-separated names, `.suffix`, `host:port`, or `*` for all. */
  readonly noProxy?: string;
}

export function proxySettingsFromEnv(env: NodeJS.ProcessEnv = process.env): ProxySettings {
  const pick = (name: string): string | undefined => {
    const value = (env[name.toLowerCase()] ?? env[name.toUpperCase()])?.trim();
    return value ? value : undefined;
  };
  const httpProxy = proxyUrl('HTTP_PROXY', pick('http_proxy'));
  const httpsProxy = proxyUrl('HTTPS_PROXY', pick('https_proxy'));
  const noProxy = pick('no_proxy');
  return { ...(httpProxy ? { httpProxy } : {}), ...(httpsProxy ? { httpsProxy } : {}), ...(noProxy ? { noProxy } : {}) };
}

/** A proxy named in the environment must be an http(s) URL: refused at start, not at the first call through it. */
function proxyUrl(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const parsed = URL.canParse(value) ? new URL(value) : undefined;
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') {
    throw new ConfigError(`${name} is not an http(s) URL of a proxy: ${JSON.stringify(value)}`, [{ path: name, message: 'expected a URL such as http://proxy.internal:3128' }]);
  }
  return value;
}
