import type { Kysely } from 'kysely';
import type { CostSql, DialectStrategy } from './dialect-strategy.js';
import type { Database } from './schema.js';

/** What every repository needs: the database (or the transaction it is bound to), its dialect and a clock. */
export interface RepositoryContext {
  readonly db: Kysely<Database>;
  readonly dialect: DialectStrategy;
  /** `dialect.costSql(db)`, looked up once per store. */
  readonly costSql: CostSql | undefined;
  /** Current time in epoch milliseconds; injectable so tests can pin it. */
  readonly now: () => number;
}

/**
 * Runs `fn` atomically: inside the current transaction when `db` already is one, otherwise in a new one.
 * Keep `fn` short — on SQLite a transaction holds the only connection.
 */
export function atomically<T>(db: Kysely<Database>, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}
