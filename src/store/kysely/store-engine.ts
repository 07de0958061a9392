import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import type { Database } from './schema.js';

/**
 * What a database engine may offer the store beyond Kysely's own executor. The SQLite engine (`../sqlite/`) attaches
 * one to the Kysely it opens; a database without one (PostgreSQL, a SQLite Kysely made elsewhere) runs everything
 * through Kysely. The store never asks how the engine groups, orders or commits its writes.
 */
export interface StoreEngine {
  /**
   * Runs a compiled query straight on the connection. `inTransaction`: the caller runs inside
   * {@link transaction}, which holds the connection already.
   */
  run<R>(query: CompiledQuery, inTransaction: boolean): Promise<QueryResult<R>>;
  /**
   * Runs `work` as one transaction on `trx` (a Kysely bound to the engine's connection, for the duration of `work`
   * only) and resolves once its writes are durable. A rejection of `work` undoes only its own writes and comes
   * back as it is; a failing BEGIN or COMMIT is passed through `wrap`.
   */
  transaction<T>(work: (trx: Kysely<Database>) => Promise<T>, wrap: (error: unknown) => Error): Promise<T>;
  /** A SQL function `(a, b)` returning the exact sum of two canonical decimal texts, if the engine registered one. */
  readonly addCostFunction?: string;
}

// Keyed by the Kysely adapter, which a database shares with every transaction on it.
const engines = new WeakMap<object, StoreEngine>();

/** Attaches `engine` to `db` and every transaction on it. */
export function attachEngine(db: Kysely<any>, engine: StoreEngine): void {
  engines.set(db.getExecutor().adapter, engine);
}

/** The engine attached to `db` (or to the database a transaction `db` runs on), if any. */
export function engineOf(db: Kysely<any>): StoreEngine | undefined {
  return engines.get(db.getExecutor().adapter);
}
