import { BaseSqliteStorage, BaseSqliteStorageDriver, type ISqliteDatabase, type ISqliteStatement } from '@mtcute/core';
import { SqliteStorage } from '@mtcute/node';
import { nodeSqlite } from '../../platform/sqlite-bindings.js';

/** The slice of `node:sqlite`'s DatabaseSync the session storage uses. */
interface NodeDatabase {
  exec(sql: string): void;
  prepare(sql: string): { run(...params: unknown[]): unknown; get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[] };
  close(): void;
}

/**
 * mtcute's session storage on Node's built-in `node:sqlite` where it is complete (22.16+, 24), else on mtcute's own
 * better-sqlite3 driver. better-sqlite3 12 aborts the process on Node 24 when the garbage collector finalises one of
 * its objects outside a JS context (the reason Palaver's own store avoids it there), and a crashed vitest worker in
 * CI on Node 24 showed the session storage hitting it too.
 */
export function sessionStorage(file: string): BaseSqliteStorage {
  const sqlite = nodeSqlite() as { DatabaseSync: new (path: string) => NodeDatabase } | undefined;
  return sqlite === undefined ? new SqliteStorage(file) : new BaseSqliteStorage(new NodeSqliteSessionDriver(file, sqlite.DatabaseSync));
}

class NodeSqliteSessionDriver extends BaseSqliteStorageDriver {
  readonly #file: string;
  readonly #open: new (
    path: string,
  ) => NodeDatabase;

  constructor(file: string, open: new (path: string) => NodeDatabase) {
    super();
    this.#file = file;
    this.#open = open;
  }

  _createDatabase(): ISqliteDatabase {
    const db = new this.#open(this.#file);
    db.exec('PRAGMA journal_mode = WAL');
    return {
      exec: (sql) => db.exec(sql),
      close: () => db.close(),
      prepare: <P extends unknown[]>(sql: string): ISqliteStatement<P> => {
        const statement = db.prepare(sql);
        return {
          run: (...params) => void statement.run(...params),
          get: (...params) => statement.get(...params),
          all: (...params) => statement.all(...params),
        };
      },
      // better-sqlite3's db.transaction(fn): fn runs in BEGIN … COMMIT, rolled back when it throws.
      transaction: <F extends (...args: any[]) => any>(fn: F): F =>
        ((...args: Parameters<F>) => {
          db.exec('BEGIN');
          try {
            const result = fn(...args) as ReturnType<F>;
            db.exec('COMMIT');
            return result;
          } catch (error) {
            db.exec('ROLLBACK');
            throw error;
          }
        }) as F,
    };
  }
}
