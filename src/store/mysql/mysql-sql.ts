import { MysqlAdapter } from 'kysely';
import type { DialectSql } from '../store-dialect.js';
import { mysqlMigrations } from './migration-dialect.js';
import { mysqlStrategy } from './mysql-strategy.js';

/** How MariaDB/MySQL speaks SQL, for the store and its migrations; `dialect.ts` loads it when the store's code loads. */
export const mysqlSql: DialectSql = { adapter: MysqlAdapter, strategy: mysqlStrategy, migrations: mysqlMigrations };
