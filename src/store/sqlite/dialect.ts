import type { StoreDialectPlugin } from '../store-dialect.js';

/** SQLite (`sqlite:<path>`, `sqlite::memory:`): one file, one process, so no bus between processes by default. */
export const sqliteDialect: StoreDialectPlugin = {
  name: 'sqlite',
  schemes: ['sqlite'],
  server: false,
  defaultBus: 'local',
  async open(url) {
    const { openSqliteDatabase } = await import('./open-sqlite-database.js');
    return { db: openSqliteDatabase(url), where: url };
  },
};
