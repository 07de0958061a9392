import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { StoreError } from '../domain/errors.js';
import type { Database } from './schema.js';

/** The in-memory database URL: gone when closed, private to one store. */
export const SQLITE_MEMORY_URL = 'sqlite::memory:';

/**
 * Parses `sqlite:<path>`, `sqlite:///absolute/path` or `sqlite::memory:` into a file path (or `:memory:`).
 *
 * @throws StoreError `invalid_url` for other schemes or an empty path.
 */
export function sqlitePathFromUrl(url: string): string {
  if (!url.startsWith('sqlite:')) throw new StoreError('invalid_url', `Not a SQLite URL: expected sqlite:<path> or ${SQLITE_MEMORY_URL}.`);
  let path = url.slice('sqlite:'.length);
  if (path === ':memory:') return path;
  if (path.startsWith('//')) path = path.slice(2); // sqlite:///var/db.sqlite → /var/db.sqlite
  if (path === '') throw new StoreError('invalid_url', `SQLite URL ${url} names no file: use sqlite:<path> or ${SQLITE_MEMORY_URL}.`);
  return path;
}

/**
 * Opens a SQLite database file (creating it and its directory) with the pragmas the store relies on:
 * WAL (readers do not block the writer), synchronous=NORMAL (durable at checkpoints, fast commits under WAL),
 * foreign keys on, and a 5 s busy timeout for a second process touching the same file.
 *
 * @throws StoreError `unreachable` when the file cannot be opened.
 */
export function openSqliteDatabase(url: string): Kysely<Database> {
  const path = sqlitePathFromUrl(url);
  let database: BetterSqlite3.Database;
  try {
    if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
    database = new BetterSqlite3(path);
  } catch (error) {
    throw new StoreError('unreachable', `Cannot open SQLite database ${path}: ${(error as Error).message}. Check the path and its permissions.`, { cause: error });
  }
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}
