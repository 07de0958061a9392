import type { DialectAdapter, Kysely } from 'kysely';
import type { DialectStrategy, StoreDialect } from './kysely/dialect-strategy.js';
import type { Database } from './kysely/schema.js';
import type { MigrationDialect } from './migration-types.js';
import type { DatabasePoolOptions } from './pool-options.js';

/** A database the dialect opened: its pool, the heartbeat's own connection (server databases), how to name it. */
export interface OpenedDatabase {
  readonly db: Kysely<Database>;
  /** One more connection, the heartbeat's own (see Store.heartbeat); none for SQLite. */
  readonly heartbeatDb?: Kysely<Database>;
  /** The URL as messages may show it (no password). */
  readonly where: string;
}

/**
 * A database dialect as a plug-in: the URL schemes it opens, how it opens them, the cluster bus `cluster.bus:
 * "auto"` picks on it, its driver's error codes, and its SQL (see {@link DialectSql}). `src/store/dialects.ts` lists
 * them; opening a store, the config's URL check, the bus, the store and the migrations read that list. Keep this
 * light: the config imports every dialect, so each loads its driver inside `open` and its SQL inside `loadSql`.
 */
export interface StoreDialectPlugin {
  readonly name: StoreDialect;
  /** URL schemes, without the colon: `sqlite`; `postgres` and `postgresql`. */
  readonly schemes: readonly string[];
  /** A server reached over the network (`scheme://…`), rather than a file path after the colon. */
  readonly server: boolean;
  /** What `cluster.bus: "auto"` picks on this database. */
  readonly defaultBus: 'local' | 'postgres' | 'redis';
  open(url: string, options: DatabasePoolOptions): Promise<OpenedDatabase>;
  /** How its driver names failures, so the store can say what happened without importing any driver. */
  readonly errors: DriverErrors;
  /** Loads its SQL half, which imports Kysely (the store loads every dialect's at once: `src/store/dialect-sql.ts`). */
  loadSql(): Promise<DialectSql>;
}

/** What the store's shared code (`kysely/`, `migrations/`) asks a dialect: how it speaks SQL. */
export interface DialectSql {
  /** Kysely's adapter class of this SQL: a Kysely instance whose adapter is one speaks this dialect. */
  readonly adapter: abstract new (
    ...args: never[]
  ) => DialectAdapter;
  /** Where its SQL differs, for the repositories. */
  readonly strategy: DialectStrategy;
  /** Its column types, table options and index drops, for the migrations. */
  readonly migrations: MigrationDialect;
}

/** What a driver failure means to a caller. */
export type DriverFailure = 'conflict' | 'foreign_key' | 'not_null' | 'unreachable' | 'other';

/** A driver's error codes and what each means to a caller. */
export interface DriverErrors {
  /** The error's `code` (SQLite: the extended result code's name) → what it means. */
  readonly codes: Readonly<Record<string, DriverFailure>>;
  /** Code prefixes that each mean one failure (PostgreSQL's SQLSTATE class `08`: connection exceptions). */
  readonly classes?: Readonly<Record<string, DriverFailure>>;
  /** Numeric codes (node:sqlite's `errcode`) → the names `codes` uses. */
  readonly numericCodes?: Readonly<Record<number, string>>;
  /** The code of a deadlock's victim: the database rolled the transaction back, and it may run again. */
  readonly deadlock?: string;
}
