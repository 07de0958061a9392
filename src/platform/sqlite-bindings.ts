import { createRequire } from 'node:module';
import type { SqliteDatabase } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { addCosts } from '../domain/money.js';
import { loadNodeSqlite } from './load-node-sqlite.js';

// The two SQLite bindings behind one small interface. better-sqlite3 is CommonJS and loaded only when chosen, so
// Node 24 never loads it.
const require = createRequire(import.meta.url);

/** Which SQLite binding to use. `auto`: Node's built-in `node:sqlite` where it is complete, else better-sqlite3. */
export type SqliteDriver = 'auto' | 'node' | 'better-sqlite3';

/** SQL function `palaver_add_cost(a, b)`: the exact sum of two canonical decimal texts, canonical (see domain/money.ts). */
export const ADD_COST_FUNCTION = 'palaver_add_cost';

const addCostFunction = (a: unknown, b: unknown): string => addCosts(String(a), String(b));

// journal_size_limit: after the WAL starts over, its file is cut back to 64 MiB rather than keeping its peak size.
const PRAGMAS = [
  'journal_mode = WAL',
  'synchronous = NORMAL',
  'foreign_keys = ON',
  'busy_timeout = 5000',
  'journal_size_limit = 67108864',
  'temp_store = MEMORY',
];

/** A database opened by one of the bindings, and a way to run statements on it that return nothing. */
export interface OpenedSqlite {
  readonly database: SqliteDatabase;
  readonly exec: (sql: string) => void;
}

export function openWithBetterSqlite3(path: string): OpenedSqlite {
  const BetterSqlite3 = require('better-sqlite3') as typeof import('better-sqlite3');
  const database = new BetterSqlite3(path);
  for (const pragma of PRAGMAS) database.pragma(pragma);
  database.function(ADD_COST_FUNCTION, { deterministic: true }, addCostFunction);
  return { database, exec: (sql) => database.exec(sql) };
}

export function openWithNodeSqlite(path: string): OpenedSqlite {
  const sqlite = nodeSqlite();
  if (!sqlite)
    throw new StoreError('unreachable', `node:sqlite is not available on Node ${process.versions.node}; use Node 22.16+ or the better-sqlite3 driver.`);
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
  readonly DatabaseSync: new (
    path: string,
  ) => {
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
export function nodeSqlite(): NodeSqliteModule | undefined {
  const sqlite = loadNodeSqlite() as NodeSqliteModule | undefined;
  return typeof sqlite?.StatementSync?.prototype?.columns === 'function' ? sqlite : undefined;
}
