import type { Kysely } from 'kysely';
import { StoreError } from '../domain/errors.js';
import type { Store } from '../domain/ports/store.js';
import type { StoreDialect } from './dialect.js';
import { KyselyStore } from './kysely-store.js';
import { migrateToLatest } from './migrations/index.js';
import { openPostgresDatabase, redactPostgresUrl, type PostgresDatabaseOptions } from './postgres-database.js';
import type { Database } from './schema.js';
import { openSqliteDatabase } from './sqlite-database.js';
import { toStoreError } from './store-errors.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions extends PostgresDatabaseOptions {
  /** Apply pending migrations before returning; default true. */
  readonly migrate?: boolean;
}

/**
 * Opens the store named by `url`: `sqlite:<path>`, `sqlite::memory:`, or `postgres://user@host:5432/db`
 * (`postgresql://` too). Checks the connection, then migrates unless `migrate: false`.
 *
 * @throws StoreError `invalid_url` for an unknown scheme, `unreachable` when the database cannot be reached,
 * `migration_failed` naming the failing migration.
 * @example
 * const store = await openStore('sqlite:data/palaver.db');
 * try { await store.ping(); } finally { await store.close(); }
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const scheme = url.slice(0, Math.max(0, url.indexOf(':'))).toLowerCase();
  let db: Kysely<Database>;
  let dialect: StoreDialect;
  let where: string;
  if (scheme === 'sqlite') {
    db = openSqliteDatabase(url);
    dialect = 'sqlite';
    where = url;
  } else if (scheme === 'postgres' || scheme === 'postgresql') {
    db = await openPostgresDatabase(url, options);
    dialect = 'postgres';
    where = redactPostgresUrl(url);
  } else {
    throw new StoreError('invalid_url', `Unsupported store URL scheme "${scheme}:": use sqlite:<path>, sqlite::memory: or postgres://user@host:port/database.`);
  }

  const store = new KyselyStore(db, { dialect });
  try {
    await store.ping().catch((error: unknown) => {
      throw new StoreError('unreachable', `Database not reachable at ${where}: ${toStoreError('connect', error).message}. Start it or fix the URL.`, { cause: error });
    });
    if (options.migrate ?? true) await migrateToLatest(db, { dialect });
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
