import { isAbsolute, resolve } from 'node:path';

/** What {@link normaliseDatabaseUrl} makes of a `database.url` / `PALAVER_DB` value. */
export type NormalisedDatabaseUrl = { readonly ok: true; readonly url: string } | { readonly ok: false; readonly message: string };

// A scheme of two or more letters followed by a colon: one letter would be a Windows drive (`C:\data\palaver.db`).
const URL_SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/**
 * Accepts `sqlite:<path>`, `sqlite::memory:`, `postgres://…`, `postgresql://…` unchanged, and reads a plain file
 * path (`./data/palaver.db`, `/var/lib/palaver.db`, `palaver.sqlite`) as `sqlite:<path>`. Anything else that looks
 * like a URL (`mysql://…`) is refused; the message names only the scheme, never the rest of the URL (it may hold a
 * password).
 */
export function normaliseDatabaseUrl(value: string): NormalisedDatabaseUrl {
  const url = value.trim();
  if (url === '') return { ok: false, message: 'empty; use sqlite:<path>, a file path, or postgres://user:pass@host/db' };
  if (url.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(url)) return { ok: true, url };
  const scheme = URL_SCHEME.exec(url)?.[1];
  if (scheme !== undefined) {
    return {
      ok: false,
      message: `"${scheme}:" databases are not supported; use sqlite:<path>, a plain file path (./data/palaver.db) or postgres://user:pass@host/db`,
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
