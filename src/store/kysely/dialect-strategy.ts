import { PostgresAdapter, SqliteAdapter, type Kysely } from 'kysely';
import { StoreError } from '../domain/errors.js';

/** The SQL dialects the store speaks. Queries differ only where these two genuinely do. */
export type StoreDialect = 'sqlite' | 'postgres';

/**
 * Tells the dialect of a Kysely instance from its adapter.
 *
 * @throws StoreError `unsupported_dialect` for anything but Kysely's SQLite or PostgreSQL adapters.
 */
export function dialectOf(db: Kysely<any>): StoreDialect {
  const adapter = db.getExecutor().adapter;
  if (adapter instanceof PostgresAdapter) return 'postgres';
  if (adapter instanceof SqliteAdapter) return 'sqlite';
  throw new StoreError(
    'unsupported_dialect',
    `The store supports Kysely's SQLite and PostgreSQL dialects, got ${adapter.constructor.name}; pass { dialect } to KyselyStore if yours is compatible.`,
  );
}
