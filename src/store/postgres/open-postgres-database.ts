import { Kysely, PostgresDialect } from 'kysely';
import type { PoolConfig } from 'pg';
import { StoreError } from '../../domain/errors.js';
import type { Database } from '../kysely/schema.js';
import type { DatabasePoolOptions } from '../pool-options.js';

/** Options of {@link openPostgresDatabase}. */
export type PostgresDatabaseOptions = DatabasePoolOptions;

/**
 * Opens a `pg` pool for a `postgres://` or `postgresql://` URL. `pg` is imported lazily, so SQLite-only users
 * never load it. No connection is made until the first query.
 */
export async function openPostgresDatabase(url: string, options: PostgresDatabaseOptions = {}): Promise<Kysely<Database>> {
  let Pool: typeof import('pg').Pool;
  try {
    ({ Pool } = (await import('pg')).default);
  } catch (error) {
    throw new StoreError('driver_missing', 'The PostgreSQL driver "pg" is not installed; run `npm install pg`.', { cause: error });
  }
  const config: PoolConfig = {
    connectionString: url,
    max: options.poolSize ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    application_name: 'palaver',
  };
  const pool = new Pool(config);
  pool.on('error', options.onPoolError ?? (() => {}));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** The URL without its password, for messages and logs. */
export function redactPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
