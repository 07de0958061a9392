import type { DialectStrategy, StoreDialect } from './dialect-strategy.js';
import { mysqlStrategy } from '../mysql/mysql-strategy.js';
import { postgresStrategy } from '../postgres/postgres-strategy.js';
import { sqliteStrategy } from '../sqlite/sqlite-strategy.js';

/** The strategy of each dialect the store speaks. */
export const DIALECT_STRATEGIES: Readonly<Record<StoreDialect, DialectStrategy>> = {
  sqlite: sqliteStrategy,
  postgres: postgresStrategy,
  mysql: mysqlStrategy,
};
