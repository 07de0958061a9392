import { ConfigError } from '../domain/errors.js';
import type { ProxySettings } from '../platform/outgoing-http.js';

export type { ProxySettings };

/**
 * The outgoing proxy, as the environment names it (HTTP_PROXY, HTTPS_PROXY, NO_PROXY; the lower-case names first,
 * as curl and undici read them), for Palaver's outgoing HTTP client (`src/platform/outgoing-http.ts`).
 */
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
    throw new ConfigError(`${name} is not an http(s) URL of a proxy: ${JSON.stringify(value)}`, [
      { path: name, message: 'expected a URL such as http://proxy.internal:3128' },
    ]);
  }
  return value;
}
