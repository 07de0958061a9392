import { PostgresAdapter } from 'kysely';
import type { DialectSql } from '../store-dialect.js';
import { postgresMigrations } from './migration-dialect.js';
import { postgresStrategy } from './postgres-strategy.js';

/** How PostgreSQL speaks SQL, for the store and its migrations; `dialect.ts` loads it when the store's code loads. */
export const postgresSql: DialectSql = { adapter: PostgresAdapter, strategy: postgresStrategy, migrations: postgresMigrations };
