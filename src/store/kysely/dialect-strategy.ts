import { sql, type InsertQueryBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder, type UpdateQueryBuilder } from 'kysely';
import type { Database, MessageValues } from './schema.js';
import type { SessionWriteArgs, SessionWriteShape } from './session-write-args.js';

/** The SQL dialects the store speaks. */
export type StoreDialect = 'sqlite' | 'postgres' | 'mysql';

/** Exact arithmetic on the money column `cost` in SQL. */
export interface CostSql {
  /** `cost` plus `amount` (a canonical decimal text parameter), exact and in the column's representation. */
  add(amount: string): RawBuilder<string>;
  /** True where `cost` is zero. */
  readonly isZero: RawBuilder<boolean>;
}

/**
 * What differs between SQL dialects, and only that: the repositories in this folder are written once against Kysely
 * and ask their strategy where a dialect has its own way. A new dialect is one strategy (plus its migrations' column
 * types) and the store contract suite (`test/store/store-contract.ts`).
 */
export interface DialectStrategy {
  readonly dialect: StoreDialect;

  /**
   * Message numbering, step one of an append: the session write (see `sessionWrite`) that hands out `args.count`
   * seqs, run inside the append's transaction and holding the session row until it ends. Returns the session's new
   * `last_seq`, or undefined when the write was refused (unknown session, or a cost in another currency). Also the
   * one statement of a usage write (`count` 0), outside a transaction, where only "refused or not" is read.
   */
  reserveSeqs(trx: Kysely<Database>, args: SessionWriteArgs, shape: SessionWriteShape): Promise<number | undefined>;

  /**
   * Message numbering in one statement, where the dialect can write the session and insert the rows at once (no
   * transaction, one round trip). Sets each row's `seq`.
   * Not offered for an append whose usage must be summed in JavaScript (no {@link costSql}). Returns false when it does not apply to this many rows;
   * the store then numbers them with {@link reserveSeqs} in a transaction.
   */
  appendInOneStatement?(db: Kysely<Database>, args: SessionWriteArgs, shape: SessionWriteShape, rows: readonly MessageValues[]): Promise<boolean>;

  /**
   * Exact sums of money in SQL on `db`, or undefined when the database cannot sum decimals exactly; the store then
   * reads, adds in JavaScript and writes, inside a transaction.
   */
  costSql(db: Kysely<Database>): CostSql | undefined;

  /**
   * The exact sum of a money column over a group, as text, for an aggregate SELECT; read it back with
   * {@link readMoneySum}. SQL's SUM on decimal text would add floats, so a dialect without an exact decimal type sums
   * exactly another way.
   */
  sumMoney(column: RawBuilder<unknown>): RawBuilder<string | null>;

  /** The canonical decimal of a {@link sumMoney} result ("0" for the sum of no rows). */
  readMoneySum(value: string | null): string;

  /**
   * The row an INSERT or UPDATE wrote (`write` ends in RETURNING), or undefined when it wrote none. Where the database
   * cannot return rows from the write, it runs without RETURNING and `readBack` reads the row in the same transaction.
   */
  writeReturning<R>(
    db: Kysely<Database>,
    write: (db: Kysely<Database>) => InsertQueryBuilder<Database, any, R> | UpdateQueryBuilder<Database, any, any, R>,
    readBack: (db: Kysely<Database>) => Promise<R | undefined>,
  ): Promise<R | undefined>;

  /** The UTC day number (days since the epoch) of an epoch-milliseconds column, as text, for grouping. */
  epochDay(column: RawBuilder<unknown>, dayMs: number): RawBuilder<string>;

  /** Upsert, the quiet kind: an INSERT that does nothing when a row with the same `keys` exists. */
  insertOrIgnore<QB extends InsertQueryBuilder<Database, any, any>>(insert: QB, keys: readonly string[]): QB;

  /**
   * Upsert, the updating kind: an INSERT that, when a row with the same `keys` exists, updates it instead: each
   * column of `replace` takes the inserted value and `increment` (if any) grows by one.
   */
  upsert<QB extends InsertQueryBuilder<Database, any, any>>(
    insert: QB,
    keys: readonly string[],
    update: { readonly replace: readonly string[]; readonly increment?: string },
  ): QB;

  /**
   * Locks the rows a SELECT reads until the transaction ends, where the dialect has concurrent writers. With
   * `allowReferences`, other transactions may still insert rows that reference the locked ones meanwhile (their
   * foreign key checks do not wait for it): a lock that serialises its takers without holding up anybody else.
   */
  lockForUpdate<QB extends SelectQueryBuilder<Database, any, any>>(select: QB, options?: { readonly allowReferences?: boolean }): QB;

  /**
   * Whether the dialect spells an upsert whose update is guarded and returns what it wrote
   * (`INSERT … ON CONFLICT … DO UPDATE … WHERE … RETURNING`): one statement where others need a transaction of three.
   */
  readonly guardedUpsertReturning: boolean;
}

/**
 * What SQLite and PostgreSQL spell the same way: upserts with `onConflict`, RETURNING on every write, integer
 * division of integers.
 */
export const sqliteAndPostgresCommons: Pick<DialectStrategy, 'insertOrIgnore' | 'upsert' | 'writeReturning' | 'epochDay' | 'guardedUpsertReturning'> = {
  guardedUpsertReturning: true,
  writeReturning: (db, write) => write(db).executeTakeFirst() as Promise<any>,
  epochDay: (column, dayMs) => sql<string>`cast(${column} / ${sql.lit(dayMs)} as text)`,
  insertOrIgnore: (insert, keys) => insert.onConflict((oc) => oc.columns(keys as any).doNothing()) as typeof insert,
  upsert: (insert, keys, { replace, increment }) => {
    // Qualified: PostgreSQL would find the column in both the table and `excluded`.
    const table = insert.toOperationNode().into?.table.identifier.name;
    return insert.onConflict((oc) =>
      oc.columns(keys as any).doUpdateSet((eb: any) => {
        const set: Record<string, unknown> = {};
        for (const column of replace) set[column] = eb.ref(`excluded.${column}`);
        if (increment !== undefined) set[increment] = eb(eb.ref(`${table}.${increment}`), '+', 1);
        return set;
      }),
    ) as typeof insert;
  },
};

// The strategy of a database, keyed by its Kysely adapter (shared by the database and every transaction on it).
const strategies = new WeakMap<object, DialectStrategy>();

/** Binds `strategy` to `db` and every transaction on it (done by `KyselyStore`). */
export function bindStrategy(db: Kysely<any>, strategy: DialectStrategy): void {
  strategies.set(db.getExecutor().adapter, strategy);
}

/**
 * The strategy bound to `db` by {@link bindStrategy}.
 *
 * @throws Error when none is: queries of this folder run only on a database a `KyselyStore` was made for.
 */
export function strategyOf(db: Kysely<any>): DialectStrategy {
  const strategy = strategies.get(db.getExecutor().adapter);
  if (strategy === undefined) throw new Error('No dialect strategy is bound to this Kysely; make a KyselyStore on it first.');
  return strategy;
}
