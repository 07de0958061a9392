// The storage adapter: opening a store, migrations, the generic Kysely store with its dialect strategies, the
// engines (SQLite, PostgreSQL, MariaDB/MySQL), and the schema for code that queries it directly.
//
// Layout: kysely/ holds the repositories, written once; each dialect's folder its plug-in (dialect.ts, listed in
// dialects.ts), its DialectStrategy for what differs and its migrations' column types: sqlite/ the SQLite engine
// (bindings, the gated connection with group commit, statement cache, WAL checkpointer and its worker); postgres/ the
// pg pool; mysql/ the mysql2 pool; migrations/ the versioned schema. openStore loads an engine only when its URL
// is opened; importing this index loads them all (drivers themselves stay lazy).

export { openStore, type OpenStoreOptions } from './open-store.js';
export { KyselyStore, type KyselyStoreOptions } from './kysely/kysely-store.js';
export type { CostSql, DialectStrategy, StoreDialect } from './kysely/dialect-strategy.js';
export { dialectOf, DIALECT_STRATEGIES } from './dialect-sql.js';
export { DEFAULT_CURRENCY } from './kysely/message-repository.js';
export { migrateToLatest, migrations, type MigrateOptions } from './migrations/index.js';
export { openSqliteDatabase, sqlitePathFromUrl, SQLITE_MEMORY_URL, type SqliteDatabaseOptions, type SqliteDriver } from './sqlite/open-sqlite-database.js';
export { openPostgresDatabase, redactPostgresUrl, type PostgresDatabaseOptions } from './postgres/open-postgres-database.js';
export { openMysqlDatabase, redactMysqlUrl, type MysqlDatabaseOptions } from './mysql/open-mysql-database.js';
export { COST_SCALE } from '../domain/money.js';
export type * from './kysely/schema.js';
