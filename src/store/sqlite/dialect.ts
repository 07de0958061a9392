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
  async loadSql() {
    return (await import('./sqlite-sql.js')).sqliteSql;
  },
  errors: {
    codes: {
      SQLITE_CONSTRAINT_UNIQUE: 'conflict',
      SQLITE_CONSTRAINT_PRIMARYKEY: 'conflict',
      SQLITE_CONSTRAINT_FOREIGNKEY: 'foreign_key',
      SQLITE_CONSTRAINT_NOTNULL: 'not_null',
      SQLITE_BUSY: 'unreachable',
    },
    // node:sqlite reports SQLite's extended result code as a number (`errcode`); better-sqlite3 names it.
    numericCodes: {
      5: 'SQLITE_BUSY',
      787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
      1299: 'SQLITE_CONSTRAINT_NOTNULL',
      1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
      2067: 'SQLITE_CONSTRAINT_UNIQUE',
    },
  },
};
