import type { StoreDialectPlugin } from '../store-dialect.js';

/** PostgreSQL (`postgres://`, `postgresql://`): its LISTEN/NOTIFY is the bus between processes, nothing more to run. */
export const postgresDialect: StoreDialectPlugin = {
  name: 'postgres',
  schemes: ['postgres', 'postgresql'],
  server: true,
  defaultBus: 'postgres',
  async open(url, options) {
    const { openPostgresDatabase, redactPostgresUrl } = await import('./open-postgres-database.js');
    return { db: await openPostgresDatabase(url, options), heartbeatDb: await openPostgresDatabase(url, { ...options, poolSize: 1 }), where: redactPostgresUrl(url) };
  },
};
