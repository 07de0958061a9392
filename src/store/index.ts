// The storage adapter: opening a store, migrations, and the schema for code that queries it directly.

export { openStore, type OpenStoreOptions } from './open-store.js';
export { KyselyStore, type KyselyStoreOptions } from './kysely-store.js';
export { migrateToLatest, migrations, type MigrateOptions } from './migrations/index.js';
export { openSqliteDatabase, sqlitePathFromUrl, SQLITE_MEMORY_URL, type SqliteDatabaseOptions } from './sqlite-database.js';
export { openPostgresDatabase, redactPostgresUrl, type PostgresDatabaseOptions } from './postgres-database.js';
export { dialectOf, type StoreDialect } from './dialect.js';
export { COST_SCALE } from './decimal.js';
export { DEFAULT_CURRENCY } from './message-repository.js';
export type * from './schema.js';
