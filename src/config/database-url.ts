import { isAbsolute, resolve } from 'node:path';
import { dialectOfUrl } from '../store/dialects.js';

/** What {@link normaliseDatabaseUrl} makes of a `database.url` / `PALAVER_DB` value. */
export type NormalisedDatabaseUrl = { readonly ok: true; readonly url: string } | { readonly ok: false; readonly message: string };

// A scheme of two or more letters followed by a colon: one letter would be a Windows drive (`C:\data\palaver.db`).
const URL_SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/**
 * Accepts `sqlite:<path>`, `sqlite::memory:`, `postgres://…`, `postgresql://…`, `mysql://…`, `mariadb://…` unchanged,
 * and reads a plain file path (`./data/palaver.db`, `/var/lib/palaver.db`, `palaver.sqlite`) as `sqlite:<path>`.
 * Anything else that looks like a URL (`mongodb://…`) is refused; the message names only the scheme, never the rest of
 * the URL (it may hold a password).
 */
export function normaliseDatabaseUrl(value: string): NormalisedDatabaseUrl {
  const url = value.trim();
  if (url === '') return { ok: false, message: 'empty; use sqlite:<path>, a file path, postgres://user:pass@host/db or mysql://user:pass@host/db' };
  // A URL of a dialect Palaver speaks (src/store/dialects.ts), its scheme in lower case.
  if (dialectOfUrl(url)?.schemes.some((scheme) => url.startsWith(`${scheme}:`))) return { ok: true, url };
  const scheme = URL_SCHEME.exec(url)?.[1];
  if (scheme !== undefined) {
    return {
      ok: false,
      message: `"${scheme}:" databases are not supported; use sqlite:<path>, a plain file path (./data/palaver.db), postgres://user:pass@host/db or mysql://user:pass@host/db (MariaDB too)`,
    };
  }
  return { ok: true, url: `sqlite:${url}` };
}

/** `sqlite:` paths relative to `baseDir`; other URLs unchanged. */
export function resolveDatabaseUrl(url: string, baseDir: string): string {
  if (!url.startsWith('sqlite:')) return url;
  const path = url.slice('sqlite:'.length);
  if (path === ':memory:' || path.startsWith('//') || isAbsolute(path)) return url;
  return `sqlite:${resolve(baseDir, path)}`;
}
