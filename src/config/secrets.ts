import type { PalaverConfig } from './schema.js';

/**
 * Names of config fields that hold a credential: `apiKey`, `bearerToken`, `botToken`, `cookieSecret`, `jwtSecret`,
 * `password`, Telegram's `apiHash`, … (a trailing `s` for lists, e.g. rotated secrets). Matched on the field name, so a secret field added
 * to the schema later is covered without touching this file; `maxTokens`-style numbers are skipped (only strings
 * count).
 */
const SECRET_FIELD = /(?:apikey|apihash|token|secret|password)s?$/i;

/**
 * HTTP header names whose value is a credential, in a `headers` map (MCP servers, the identity directory):
 * `Authorization`, `Cookie`, and any name with token, key, secret, password or auth in it (`X-Api-Key`). Other
 * headers (`MCP-Protocol-Version`, a tenant id) stay readable in logs.
 */
const SECRET_HEADER = /^(?:proxy-)?authorization$|^cookie$|token|key|secret|password|auth/i;

/**
 * Every secret value in a config, for the logger's scrubber (`createLogger({ secrets })`): the model and fallback
 * API keys, the server API key, MCP bearer tokens and credential headers ({@link SECRET_HEADER}), the password in a database (PostgreSQL, MariaDB/MySQL) or Redis URL, and any later field whose name
 * says it is a credential (see {@link SECRET_FIELD}). Values are returned as configured, shortest included; the
 * logger decides which are long enough to scrub.
 *
 * @example
 * const logger = createLogger({ level: config.log.level, secrets: secretsOf(config) });
 */
export function secretsOf(config: PalaverConfig | Readonly<Record<string, unknown>>): string[] {
  const found = new Set<string>();
  collect(config, found, false);
  for (const password of databasePassword((config as { database?: { url?: unknown } }).database?.url)) found.add(password);
  for (const password of urlPassword((config as { redis?: { url?: unknown } }).redis?.url, /^rediss?:\/\//)) found.add(password);
  return [...found];
}

function collect(value: unknown, found: Set<string>, isSecret: boolean): void {
  if (typeof value === 'string') {
    if (isSecret && value !== '') found.add(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collect(item, found, isSecret);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'headers' && item && typeof item === 'object' && !Array.isArray(item)) {
        for (const [name, header] of Object.entries(item)) {
          if (!SECRET_HEADER.test(name) || typeof header !== 'string' || header === '') continue;
          found.add(header);
          // `Bearer <token>`: the token alone may turn up in a line too (a server echoing it back).
          const credential = /^[A-Za-z][\w-]*\s+(\S.*)$/.exec(header)?.[1];
          if (credential !== undefined) found.add(credential);
        }
        continue;
      }
      collect(item, found, SECRET_FIELD.test(key));
    }
  }
}

/** The password of a `postgres://` or `mysql://` (`mariadb://`) URL, as written and decoded; none for SQLite. */
function databasePassword(url: unknown): string[] {
  return urlPassword(url, /^(postgres(ql)?|mysql|mariadb):\/\//);
}

/** The password of a URL of the given scheme, as written and decoded (a `redis://:password@host` too). */
function urlPassword(url: unknown, scheme: RegExp): string[] {
  if (typeof url !== 'string' || !scheme.test(url)) return [];
  try {
    const written = new URL(url).password;
    if (!written) return [];
    let decoded = written;
    try {
      decoded = decodeURIComponent(written);
    } catch {
      // a stray % is taken literally
    }
    return [...new Set([written, decoded])];
  } catch {
    return [];
  }
}
