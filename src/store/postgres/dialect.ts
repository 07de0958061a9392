import type { StoreDialectPlugin } from '../store-dialect.js';

/** PostgreSQL (`postgres://`, `postgresql://`): its LISTEN/NOTIFY is the bus between processes, nothing more to run. */
export const postgresDialect: StoreDialectPlugin = {
  name: 'postgres',
  schemes: ['postgres', 'postgresql'],
  server: true,
  defaultBus: 'postgres',
  async open(url, options) {
    const { openPostgresDatabase, redactPostgresUrl } = await import('./open-postgres-database.js');
    return {
      db: await openPostgresDatabase(url, options),
      heartbeatDb: await openPostgresDatabase(url, { ...options, poolSize: 1 }),
      where: redactPostgresUrl(url),
    };
  },
  async loadSql() {
    return (await import('./postgres-sql.js')).postgresSql;
  },
  errors: {
    // SQLSTATE codes: unique, foreign key and not-null violations; admin_shutdown, cannot_connect_now, too_many_connections.
    codes: { '23505': 'conflict', '23503': 'foreign_key', '23502': 'not_null', '57P01': 'unreachable', '57P03': 'unreachable', '53300': 'unreachable' },
    classes: { '08': 'unreachable' },
    deadlock: '40P01',
  },
};
