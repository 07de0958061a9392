import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import type { Kysely, SqliteDatabase, SqliteStatement } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { addCosts } from './decimal.js';
import type { Database } from './schema.js';
import { ConnectionGate, createGatedSqliteKysely, isGatedSqlite } from './sqlite-connection.js';
import { WalCheckpointer } from './wal-checkpointer.js';

// better-sqlite3 is CommonJS and loaded only when chosen, so Node 24 never loads it.
const require = createRequire(import.meta.url);

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

/** Which SQLite binding to use. `auto`: Node's built-in `node:sqlite` where it is complete, else better-sqlite3. */
export type SqliteDriver = 'auto' | 'node' | 'better-sqlite3';

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
    throw new StoreError('unreachable', `Cannot open SQLite database ${path}: ${(error as Error).message}. Check the path and its permissions.`, { cause: error });
  }
  const gate = new ConnectionGate();
  const statements = withStatementCache(opened.database);
  let checkpointer: WalCheckpointer | undefined;
  const { db, connection } = createGatedSqliteKysely(statements, gate, async () => {
    // The worker's connection closes first, so the main one is the last and cleans up the WAL as it closes.
    await checkpointer?.stop();
    statements.close();
  });
  // An in-memory database has no WAL; a file gets its checkpoints from a worker thread.
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
  }
  return db;
}

/** Options of {@link openSqliteDatabase}. */
export interface SqliteDatabaseOptions {
  readonly driver?: SqliteDriver;
  /** How often the checkpointer runs and when it resets the WAL; the defaults suit production. */
  readonly checkpoints?: { readonly intervalMs?: number; readonly restartFrames?: number };
}

/** SQL function `palaver_add_cost(a, b)`: the exact sum of two canonical decimal texts, canonical (see decimal.ts). */
export const ADD_COST_FUNCTION = 'palaver_add_cost';

/**
 * True when `db` (or the transaction) runs on a database opened by {@link openSqliteDatabase}, which registers
 * {@link ADD_COST_FUNCTION}; a SQLite Kysely made elsewhere does not have it.
 */
export function hasAddCostFunction(db: Kysely<Database>): boolean {
  return isGatedSqlite(db);
}

const addCostFunction = (a: unknown, b: unknown): string => addCosts(String(a), String(b));

// journal_size_limit: after the WAL starts over, its file is cut back to 64 MiB rather than keeping its peak size.
const PRAGMAS = ['journal_mode = WAL', 'synchronous = NORMAL', 'foreign_keys = ON', 'busy_timeout = 5000', 'journal_size_limit = 67108864', 'temp_store = MEMORY'];

/** A database opened by one of the bindings, and a way to run statements on it that return nothing. */
interface OpenedSqlite {
  readonly database: SqliteDatabase;
  readonly exec: (sql: string) => void;
}

function openWithBetterSqlite3(path: string): OpenedSqlite {
  const BetterSqlite3 = require('better-sqlite3') as typeof import('better-sqlite3');
  const database = new BetterSqlite3(path);
  for (const pragma of PRAGMAS) database.pragma(pragma);
  database.function(ADD_COST_FUNCTION, { deterministic: true }, addCostFunction);
  return { database, exec: (sql) => database.exec(sql) };
}

function openWithNodeSqlite(path: string): OpenedSqlite {
  const sqlite = nodeSqlite();
  if (!sqlite) throw new StoreError('unreachable', `node:sqlite is not available on Node ${process.versions.node}; use Node 22.16+ or the better-sqlite3 driver.`);
  const database = new sqlite.DatabaseSync(path);
  for (const pragma of PRAGMAS) database.exec(`PRAGMA ${pragma}`);
  database.function(ADD_COST_FUNCTION, { deterministic: true }, addCostFunction);
  return { database: wrapNodeSqlite(database), exec: (sql) => database.exec(sql) };
}

function wrapNodeSqlite(database: InstanceType<NodeSqliteModule['DatabaseSync']>): SqliteDatabase {
  return {
    close: () => database.close(),
    prepare(sql) {
      const statement = database.prepare(sql);
      // Kysely asks `reader` to choose between all() and run(); node:sqlite tells it through the result columns.
      return {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...(parameters as SqlValue[])),
        run: (parameters) => statement.run(...(parameters as SqlValue[])),
        iterate: (parameters) => statement.iterate(...(parameters as SqlValue[])),
      };
    },
  };
}

type SqlValue = null | number | bigint | string | NodeJS.ArrayBufferView;

/** The slice of `node:sqlite` used here (typed locally: Node 20's type definitions do not have the module). */
interface NodeSqliteModule {
  readonly DatabaseSync: new (path: string) => {
    exec(sql: string): void;
    function(name: string, options: { deterministic: boolean }, fn: (...args: any[]) => unknown): void;
    prepare(sql: string): {
      columns(): unknown[];
      all(...parameters: SqlValue[]): unknown[];
      run(...parameters: SqlValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
      iterate(...parameters: SqlValue[]): IterableIterator<unknown>;
    };
    close(): void;
  };
  readonly StatementSync: { readonly prototype: { readonly columns?: unknown } };
}

/** `node:sqlite` when this Node has it with `StatementSync#columns` (22.16+, 23.11+, 24), else undefined. */
function nodeSqlite(): NodeSqliteModule | undefined {
  const sqlite = process.getBuiltinModule?.('node:sqlite') as NodeSqliteModule | undefined;
  return typeof sqlite?.StatementSync?.prototype?.columns === 'function' ? sqlite : undefined;
}

/** Distinct SQL texts kept prepared; the store issues a few dozen, so this is never reached in practice. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Kysely's SQLite driver prepares every query afresh; preparing costs as much as running a small statement.
 * A turn repeats the same few SQL texts, so the prepared statements are kept and reused. Safe because SQLite has
 * one connection, which Kysely's driver already serialises.
 */
function withStatementCache(database: SqliteDatabase): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => {
      statements.clear();
      database.close();
    },
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) {
        statement = database.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}
