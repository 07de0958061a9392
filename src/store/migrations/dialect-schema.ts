import type { ColumnDataType, CreateTableBuilder, Expression, Kysely } from 'kysely';
import { dialectSql } from '../dialect-sql.js';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

type DataTypeExpression = ColumnDataType | Expression<unknown>;

// What the migrations spell per dialect lives in each dialect's folder (`migration-dialect.ts`, which its plug-in in
// src/store/dialects.ts loads with its SQL); the migrations ask here by the dialect's name.

/** Column types of a dialect: `key` for ids, keys, indexed and enumerated text; `long` for free text. */
export interface TextTypes {
  readonly key: DataTypeExpression;
  readonly long: DataTypeExpression;
}

export function textTypes(dialect: StoreDialect): TextTypes {
  const { key, long } = dialectSql(dialect).migrations;
  return { key, long };
}

/** Exact money: numeric on PostgreSQL, DECIMAL on MariaDB/MySQL, canonical decimal text on SQLite. */
export function moneyType(dialect: StoreDialect): Expression<unknown> {
  return dialectSql(dialect).migrations.money;
}

/** `db.schema.createTable(name)` with the dialect's table options (MariaDB/MySQL: InnoDB, utf8mb4, binary collation). */
export function createTable(db: Kysely<any>, dialect: StoreDialect, name: string): CreateTableBuilder<string, never> {
  const table = db.schema.createTable(name);
  return dialectSql(dialect).migrations.createTable?.(table) ?? table;
}

/** Drops an index; MariaDB/MySQL name indexes per table, so there the table is named too. */
export async function dropIndex(db: Kysely<any>, dialect: StoreDialect, name: string, table: string): Promise<void> {
  const drop = db.schema.dropIndex(name);
  await (dialectSql(dialect).migrations.dropIndexOnTable === true ? drop.on(table) : drop).execute();
}
