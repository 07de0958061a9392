import { createRequire } from 'node:module';

// Tests read a SQLite file on their own connection, the way another process would see it. They use the binding
// Palaver itself uses on this Node: node:sqlite where it is complete (Node 22.16+, 24), better-sqlite3 only on
// Node 20. On Node 24 the GC can abort the process while finalising a better-sqlite3 statement, which took down a
// whole test worker in CI.

/** The few calls tests need from a read connection. */
export interface SqliteReader {
  get<T>(sql: string, ...parameters: (string | number)[]): T | undefined;
  all<T>(sql: string, ...parameters: (string | number)[]): T[];
  /** Runs statements that return nothing (DDL), on a writable connection. */
  exec(sql: string): void;
  close(): void;
}

interface NodeSqliteLike {
  readonly DatabaseSync: new (
    path: string,
    options?: { readOnly?: boolean },
  ) => { prepare(sql: string): { get(...p: unknown[]): unknown; all(...p: unknown[]): unknown[] }; exec(sql: string): void; close(): void };
  readonly StatementSync?: { readonly prototype?: { readonly columns?: unknown } };
}

/** Opens `path` (a file path or a `sqlite:` URL); read-only unless `writable`. */
export function openSqliteFile(path: string, { writable = false } = {}): SqliteReader {
  const file = path.replace(/^sqlite:/, '');
  const builtin = process.getBuiltinModule?.('node:sqlite') as NodeSqliteLike | undefined;
  const database =
    typeof builtin?.StatementSync?.prototype?.columns === 'function'
      ? new builtin.DatabaseSync(file, { readOnly: !writable })
      : new (createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3'))(file, { readonly: !writable, fileMustExist: true });
  return {
    get: <T>(sql: string, ...parameters: (string | number)[]) => database.prepare(sql).get(...parameters) as T | undefined,
    all: <T>(sql: string, ...parameters: (string | number)[]) => database.prepare(sql).all(...parameters) as T[],
    exec: (sql: string) => {
      database.exec(sql);
    },
    close: () => database.close(),
  };
}

/** Runs `read` on a fresh read-only connection to `path` and closes it. */
export function readSqliteFile<T>(path: string, read: (db: SqliteReader) => T): T {
  const db = openSqliteFile(path);
  try {
    return read(db);
  } finally {
    db.close();
  }
}
