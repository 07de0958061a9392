import { StoreError } from '../domain/errors.js';
import type { Store } from '../domain/ports/store.js';
import { KyselyStore } from './kysely/kysely-store.js';
import { toStoreError } from './kysely/store-errors.js';
import { migrateToLatest } from './migrations/index.js';
import { dialectOfUrl } from './dialects.js';
import type { DatabasePoolOptions } from './pool-options.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions extends DatabasePoolOptions {
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
  const dialect = dialectOfUrl(url);
  if (dialect === undefined) {
    const scheme = url.slice(0, Math.max(0, url.indexOf(':'))).toLowerCase();
    throw new StoreError(
      'invalid_url',
      `Unsupported store URL scheme "${scheme}:": use sqlite:<path>, sqlite::memory:, postgres://user@host:port/database or mysql://user@host:port/database.`,
    );
  }
  // Each dialect loads its engine when its URL is opened.
  const { db, heartbeatDb, where } = await dialect.open(url, options);

  const store = new KyselyStore(db, { dialect: dialect.name, ...(heartbeatDb === undefined ? {} : { heartbeatDb }) });
  try {
    await store.ping().catch((error: unknown) => {
      throw new StoreError('unreachable', `Database not reachable at ${where}: ${toStoreError('connect', error).message}. Start it or fix the URL.`, {
        cause: error,
      });
    });
    if (options.migrate ?? true) await migrateToLatest(db, { dialect: dialect.name });
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
