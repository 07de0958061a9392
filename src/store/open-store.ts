import type { Kysely } from 'kysely';
import { StoreError } from '../domain/errors.js';
import type { Store } from '../domain/ports/store.js';
import type { StoreDialect } from './kysely/dialect-strategy.js';
import { KyselyStore } from './kysely/kysely-store.js';
import type { Database } from './kysely/schema.js';
import { toStoreError } from './kysely/store-errors.js';
import { migrateToLatest } from './migrations/index.js';
import type { PostgresDatabaseOptions } from './postgres/open-postgres-database.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions extends PostgresDatabaseOptions {
  /** Apply pending migrations before returning; default true. */
  readonly migrate?: boolean;
}

/**
 * Opens the store named by `url`: `sqlite:<path>`, `sqlite::memory:`, `postgres://user@host:5432/db`
 * (`postgresql://` too) or `mysql://user@host:3306/db` (`mariadb://` too). Checks the connection, then migrates
 * unless `migrate: false`. Each engine is loaded when its URL is opened: the SQLite engine (and its binding) only for
 * `sqlite:`, `pg` only for PostgreSQL, `mysql2` only for MariaDB/MySQL.
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
  // PostgreSQL and MariaDB: one more connection, the heartbeat's own (see Store.heartbeat).
  let heartbeatDb: Kysely<Database> | undefined;
  let dialect: StoreDialect;
  let where: string;
  if (scheme === 'sqlite') {
    const { openSqliteDatabase } = await import('./sqlite/open-sqlite-database.js');
    db = openSqliteDatabase(url);
    dialect = 'sqlite';
    where = url;
  } else if (scheme === 'postgres' || scheme === 'postgresql') {
    const { openPostgresDatabase, redactPostgresUrl } = await import('./postgres/open-postgres-database.js');
    db = await openPostgresDatabase(url, options);
    heartbeatDb = await openPostgresDatabase(url, { ...options, poolSize: 1 });
    dialect = 'postgres';
    where = redactPostgresUrl(url);
  } else if (scheme === 'mysql' || scheme === 'mariadb') {
    const { openMysqlDatabase, redactMysqlUrl } = await import('./mysql/open-mysql-database.js');
    db = await openMysqlDatabase(url, options);
    heartbeatDb = await openMysqlDatabase(url, { ...options, poolSize: 1 });
    dialect = 'mysql';
    where = redactMysqlUrl(url);
  } else {
    throw new StoreError(
      'invalid_url',
      `Unsupported store URL scheme "${scheme}:": use sqlite:<path>, sqlite::memory:, postgres://user@host:port/database or mysql://user@host:port/database.`,
    );
  }

  const store = new KyselyStore(db, { dialect, ...(heartbeatDb === undefined ? {} : { heartbeatDb }) });
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
