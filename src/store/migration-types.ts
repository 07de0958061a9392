import type { ColumnDataType, CreateTableBuilder, Expression } from 'kysely';

type DataTypeExpression = ColumnDataType | Expression<unknown>;

/** What the migrations spell differently on a dialect: its column types and how it creates tables and drops indexes. */
export interface MigrationDialect {
  /** For ids, keys, indexed and enumerated text. */
  readonly key: DataTypeExpression;
  /** For free text (messages, JSON, names). */
  readonly long: DataTypeExpression;
  /** Exact money. */
  readonly money: Expression<unknown>;
  /** A table being created, with the dialect's table options. Default: as Kysely builds it. */
  readonly createTable?: (table: CreateTableBuilder<string, never>) => CreateTableBuilder<string, never>;
  /** Whether an index is dropped naming its table (indexes are named per table). */
  readonly dropIndexOnTable?: boolean;
}
