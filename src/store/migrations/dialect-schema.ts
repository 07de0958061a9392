import type { ColumnDataType, CreateTableBuilder, Expression, Kysely } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import type { MigrationDialect } from '../migration-types.js';
import { mysqlMigrations } from '../mysql/migration-dialect.js';
import { postgresMigrations } from '../postgres/migration-dialect.js';
import { sqliteMigrations } from '../sqlite/migration-dialect.js';

type DataTypeExpression = ColumnDataType | Expression<unknown>;

// What the migrations spell per dialect lives in each dialect's folder (`migration-dialect.ts`); the migrations
// ask here by the dialect's name.
const MIGRATION_DIALECTS: Readonly<Record<StoreDialect, MigrationDialect>> = { sqlite: sqliteMigrations, postgres: postgresMigrations, mysql: mysqlMigrations };

/** Column types of a dialect: `key` for ids, keys, indexed and enumerated text; `long` for free text. */
export interface TextTypes {
  readonly key: DataTypeExpression;
  readonly long: DataTypeExpression;
}

export function textTypes(dialect: StoreDialect): TextTypes {
  const { key, long } = MIGRATION_DIALECTS[dialect];
  return { key, long };
}

/** Exact money: numeric on PostgreSQL, DECIMAL on MariaDB/MySQL, canonical decimal text on SQLite. */
export function moneyType(dialect: StoreDialect): Expression<unknown> {
  return MIGRATION_DIALECTS[dialect].money;
}

/** `db.schema.createTable(name)` with the dialect's table options (MariaDB/MySQL: InnoDB, utf8mb4, binary collation). */
export function createTable(db: Kysely<any>, dialect: StoreDialect, name: string): CreateTableBuilder<string, never> {
  const table = db.schema.createTable(name);
  return MIGRATION_DIALECTS[dialect].createTable?.(table) ?? table;
}

/** Drops an index; MariaDB/MySQL name indexes per table, so there the table is named too. */
export async function dropIndex(db: Kysely<any>, dialect: StoreDialect, name: string, table: string): Promise<void> {
  const drop = db.schema.dropIndex(name);
  await (MIGRATION_DIALECTS[dialect].dropIndexOnTable === true ? drop.on(table) : drop).execute();
}
