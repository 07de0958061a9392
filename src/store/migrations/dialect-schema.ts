import { sql, type ColumnDataType, type CreateTableBuilder, type Expression, type Kysely } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

type DataTypeExpression = ColumnDataType | Expression<unknown>;

// What the migrations spell per dialect. SQLite and PostgreSQL take `text` for every string; MariaDB/MySQL cannot
// index TEXT, so keys, indexed and enumerated columns are varchar(255) there (1020 bytes in utf8mb4, so three of them
// still fit InnoDB's 3072-byte index key) and free text (messages, JSON, names) is LONGTEXT.

/** Column types of a dialect: `key` for ids, keys, indexed and enumerated text; `long` for free text. */
export interface TextTypes {
  readonly key: DataTypeExpression;
  readonly long: DataTypeExpression;
}

export function textTypes(dialect: StoreDialect): TextTypes {
  return dialect === 'mysql' ? { key: sql`varchar(255)`, long: sql`longtext` } : { key: 'text', long: 'text' };
}

/** Exact money: numeric on PostgreSQL, DECIMAL on MariaDB/MySQL, canonical decimal text on SQLite (a numeric column there would hold floats). */
export function moneyType(dialect: StoreDialect): Expression<unknown> {
  return dialect === 'postgres' ? sql`numeric(20, 10)` : dialect === 'mysql' ? sql`decimal(20, 10)` : sql`text`;
}

/**
 * `db.schema.createTable(name)`, on MariaDB/MySQL as an InnoDB table in utf8mb4 with a binary collation, whatever the
 * database's defaults: ids, dedupe keys and names then compare byte for byte, as on PostgreSQL.
 */
export function createTable(db: Kysely<any>, dialect: StoreDialect, name: string): CreateTableBuilder<string, never> {
  const table = db.schema.createTable(name);
  return dialect === 'mysql' ? table.modifyEnd(sql`engine = InnoDB default charset = utf8mb4 collate = utf8mb4_bin`) : table;
}

/** Drops an index; MariaDB/MySQL name indexes per table, so there the table is named too. */
export async function dropIndex(db: Kysely<any>, dialect: StoreDialect, name: string, table: string): Promise<void> {
  const drop = db.schema.dropIndex(name);
  await (dialect === 'mysql' ? drop.on(table) : drop).execute();
}
