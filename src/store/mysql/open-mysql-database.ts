import { Kysely, MysqlDialect, type MysqlPool, type MysqlPoolConnection, type MysqlQueryResult } from 'kysely';
import type { Pool, PoolConnection, PoolOptions } from 'mysql2';
import { StoreError } from '../../domain/errors.js';
import type { Database } from '../kysely/schema.js';
import type { DatabasePoolOptions } from '../pool-options.js';

/** Options of {@link openMysqlDatabase}: the same pool settings as PostgreSQL's. */
export type MysqlDatabaseOptions = DatabasePoolOptions;

/**
 * Opens a `mysql2` pool for a `mysql://` or `mariadb://` URL (MariaDB 10.11+). `mysql2` is imported lazily, so users
 * of the other stores never load it. No connection is made until the first query.
 *
 * Each connection speaks utf8mb4 with a binary collation (ids and keys compare byte for byte, as on PostgreSQL), runs
 * READ COMMITTED (PostgreSQL's default, which the repositories are written for) and returns BIGINTs beyond 2^53 as
 * strings, DECIMALs always as strings, so nothing is rounded on the way.
 */
export async function openMysqlDatabase(url: string, options: MysqlDatabaseOptions = {}): Promise<Kysely<Database>> {
  let createPool: typeof import('mysql2').createPool;
  try {
    ({ createPool } = (await import('mysql2')).default);
  } catch (error) {
    throw new StoreError('driver_missing', 'The MariaDB/MySQL driver "mysql2" is not installed; run `npm install mysql2`.', { cause: error });
  }
  const config: PoolOptions = {
    uri: url.replace(/^mariadb:/i, 'mysql:'),
    connectionLimit: options.poolSize ?? 10,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    idleTimeout: 30_000,
    enableKeepAlive: true,
    charset: 'UTF8MB4_BIN',
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: false,
    decimalNumbers: false,
    dateStrings: true,
    multipleStatements: false,
    // Without FOUND_ROWS an INSERT … ON DUPLICATE KEY UPDATE that changed nothing reports 0 rows, which is how
    // `insertOrIgnore` tells "inserted" from "was there". UPDATEs get their matched count back in `matchedRowsPool`.
    flags: ['-FOUND_ROWS'],
  };
  const pool = createPool(config);
  const statementSeconds = (options.statementTimeoutMs ?? 30_000) / 1000;
  pool.on('connection', (connection) => {
    // Queued ahead of any query on this connection (a failure here would otherwise be an unhandled 'error' event).
    // max_statement_time is MariaDB's; MySQL refuses it and keeps no statement limit.
    connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', () => {});
    connection.query(`SET SESSION max_statement_time = ${statementSeconds}`, () => {});
  });
  // mysql2 emits 'error' on the pool for idle connections that fail; without a listener Node would crash.
  (pool as unknown as NodeJS.EventEmitter).on('error', options.onPoolError ?? (() => {}));
  return new Kysely<Database>({ dialect: new MysqlDialect({ pool: matchedRowsPool(pool) }) });
}

/** The URL without its password, for messages and logs. */
export function redactMysqlUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'mysql://(unparseable URL)';
  }
}

const MATCHED = /^Rows matched:\s*(\d+)/;

/**
 * The pool as Kysely sees it, with one change to results: an UPDATE reports the rows it matched (as PostgreSQL and
 * SQLite do), not only those it changed, so "no such row" checks hold when a write sets a row to what it was.
 */
function matchedRowsPool(pool: Pool): MysqlPool {
  // One wrapper per connection: Kysely keeps its own state per connection object.
  const wrapped = new WeakMap<PoolConnection, MysqlPoolConnection>();
  const wrap = (connection: PoolConnection): MysqlPoolConnection => {
    let wrapper = wrapped.get(connection);
    if (wrapper === undefined) {
      const query = (sql: string, parameters: unknown[], callback?: (error: unknown, result: MysqlQueryResult) => void) => {
        if (callback === undefined) return connection.query(sql, parameters);
        connection.query(sql, parameters, (error, result) => {
          const header = result as { info?: unknown; affectedRows?: number } | undefined;
          const matched = typeof header?.info === 'string' ? MATCHED.exec(header.info) : null;
          if (matched !== null) header!.affectedRows = Number(matched[1]);
          callback(error, result as MysqlQueryResult);
        });
        return undefined;
      };
      wrapper = { query: query as MysqlPoolConnection['query'], release: () => connection.release() };
      wrapped.set(connection, wrapper);
    }
    return wrapper;
  };
  return {
    getConnection: (callback) => pool.getConnection((error, connection) => callback(error, error ? (undefined as never) : wrap(connection))),
    end: (callback) => pool.end(callback),
  };
}
