import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { Database } from '../kysely/schema.js';
import { ConnectionGate } from './connection-gate.js';
import { createGatedSqliteKysely } from './gated-sqlite-kysely.js';
import {
  ADD_COST_FUNCTION,
  nodeSqlite,
  openWithBetterSqlite3,
  openWithNodeSqlite,
  type OpenedSqlite,
  type SqliteDriver,
} from '../../platform/sqlite-bindings.js';
import { withStatementCache } from './statement-cache.js';
import { WalCheckpointer, type WalCheckpointerOptions } from './wal-checkpointer.js';

export type { SqliteDriver } from '../../platform/sqlite-bindings.js';

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
 * The binding: on Node 22.16+ / 24 the built-in `node:sqlite`; on Node 20 better-sqlite3. better-sqlite3 12 aborts
 * the process on Node 24 when the garbage collector finalises one of its objects outside a JS context
 * ("Assertion failed: (env) != nullptr"), so it is loaded only where there is no built-in alternative.
 *
 * @throws StoreError `unreachable` when the file cannot be opened.
 */
export function openSqliteDatabase(url: string, options: SqliteDatabaseOptions = {}): Kysely<Database> {
  const path = sqlitePathFromUrl(url);
  const driver = options.driver === undefined || options.driver === 'auto' ? (nodeSqlite() ? 'node' : 'better-sqlite3') : options.driver;
  let opened: OpenedSqlite;
  try {
    if (path !== ':memory:') mkdirSync(dirname(resolve(path)), { recursive: true });
    opened = driver === 'node' ? openWithNodeSqlite(path) : openWithBetterSqlite3(path);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError('unreachable', `Cannot open SQLite database ${path}: ${(error as Error).message}. Check the path and its permissions.`, {
      cause: error,
    });
  }
  const gate = new ConnectionGate();
  const statements = withStatementCache(opened.database);
  let checkpointer: WalCheckpointer | undefined;
  const { db, connection } = createGatedSqliteKysely(
    statements,
    gate,
    async () => {
      // The worker's connection closes first, so the main one is the last and cleans up the WAL as it closes.
      await checkpointer?.stop();
      statements.close();
    },
    { addCostFunction: ADD_COST_FUNCTION },
  );
  // An in-memory database has no WAL; a file gets its checkpoints from a worker thread once writes are frequent.
  if (path !== ':memory:') {
    checkpointer = new WalCheckpointer({
      ...options.checkpoints,
      path,
      binding: driver,
      setAutoCheckpoint: (pages) => opened.exec(`PRAGMA wal_autocheckpoint = ${pages}`),
      whileWritesPaused: async (fn) => {
        await gate.enter();
        try {
          // An open transaction would keep the checkpoint from finishing.
          connection.commitGroup();
          await fn();
        } finally {
          gate.leave();
        }
      },
    });
    // Each write counts towards starting the worker (again, after it ended while the database was idle).
    const idle = checkpointer;
    connection.onWrite = () => idle.wake();
  }
  return db;
}

/** Options of {@link openSqliteDatabase}. */
export interface SqliteDatabaseOptions {
  readonly driver?: SqliteDriver;
  /** How often the checkpointer runs and when it resets the WAL; the defaults suit production. */
  readonly checkpoints?: Pick<WalCheckpointerOptions, 'intervalMs' | 'restartFrames' | 'idleStopMs' | 'startAfter'>;
}
