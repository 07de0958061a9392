import { SqliteAdapter } from 'kysely';
import type { DialectSql } from '../store-dialect.js';
import { sqliteMigrations } from './migration-dialect.js';
import { sqliteStrategy } from './sqlite-strategy.js';

/** How SQLite speaks SQL, for the store and its migrations; `dialect.ts` loads it when the store's code loads. */
export const sqliteSql: DialectSql = { adapter: SqliteAdapter, strategy: sqliteStrategy, migrations: sqliteMigrations };
