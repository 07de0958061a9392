import { CompiledQuery, Kysely, SqliteDialect, Transaction, type DatabaseConnection, type Driver, type QueryResult, type SqliteDatabase } from 'kysely';
import type { Database } from '../kysely/schema.js';
import { attachEngine, type StoreEngine } from '../kysely/store-engine.js';
import type { ConnectionGate } from './connection-gate.js';
import { SqliteConnection } from './sqlite-connection.js';

/** Kysely's driver for the connection: the connection is held through the gate. */
class GatedSqliteDriver implements Driver {
  readonly #connection: SqliteConnection;
  readonly #close: () => Promise<void>;

  constructor(connection: SqliteConnection, close: () => Promise<void>) {
    this.#connection = connection;
    this.#close = close;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#connection.gate.enter();
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    this.#connection.gate.leave();
  }

  async beginTransaction(): Promise<void> {
    this.#connection.begin();
  }

  async commitTransaction(): Promise<void> {
    this.#connection.commit();
  }

  async rollbackTransaction(): Promise<void> {
    this.#connection.rollback();
  }

  async savepoint(_connection: DatabaseConnection, name: string): Promise<void> {
    this.#connection.run(CompiledQuery.raw(`savepoint ${quoteName(name)}`));
  }

  async rollbackToSavepoint(_connection: DatabaseConnection, name: string): Promise<void> {
    this.#connection.run(CompiledQuery.raw(`rollback to ${quoteName(name)}`));
  }

  async releaseSavepoint(_connection: DatabaseConnection, name: string): Promise<void> {
    this.#connection.run(CompiledQuery.raw(`release ${quoteName(name)}`));
  }

  async destroy(): Promise<void> {
    await this.#connection.flush();
    await this.#close();
  }
}

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * A Kysely on one SQLite connection whose queries, transactions and direct statements all take turns through
 * `gate`, with the connection attached as the database's {@link StoreEngine}: the store's prepared statements run
 * straight on it, and its transactions skip Kysely's transaction builder. `close` runs when Kysely is destroyed,
 * after the last group is committed.
 */
export function createGatedSqliteKysely(
  database: SqliteDatabase,
  gate: ConnectionGate,
  close: () => Promise<void>,
  options: { readonly addCostFunction?: string } = {},
): { db: Kysely<Database>; connection: SqliteConnection } {
  const connection = new SqliteConnection(database, gate);
  const dialect = new (class extends SqliteDialect {
    override createDriver(): Driver {
      return new GatedSqliteDriver(connection, close);
    }
  })({ database });
  const db = new Kysely<Database>({ dialect });
  // Kysely's own transaction() acquires the connection, builds a Transaction and chains promises per query; the
  // store's transactions take the gate themselves and all run on this one, bound to the connection without the
  // gate (valid only while connection.transaction holds it; they run one at a time).
  const held = db.getExecutor().withConnectionProvider({ provideConnection: (consume) => consume(connection) });
  const trx = new Transaction<Database>({ config: { dialect }, dialect, driver: new GatedSqliteDriver(connection, close), executor: held });
  const engine: StoreEngine = {
    run: (query, inTransaction) => runDirect(connection, query, inTransaction),
    transaction: (work, wrap) => connection.transaction(work, trx, wrap),
    ...(options.addCostFunction === undefined ? {} : { addCostFunction: options.addCostFunction }),
  };
  attachEngine(db, engine);
  return { db, connection };
}

/**
 * Runs a compiled query straight on the connection, skipping Kysely's executor (a chain of promises per query that
 * costs more than SQLite's own work for the small statements of a turn). Inside a transaction the transaction holds
 * the gate already; outside, the statement runs at once when the gate is free and waits its turn otherwise.
 */
function runDirect<R>(connection: SqliteConnection, query: CompiledQuery, inTransaction: boolean): Promise<QueryResult<R>> {
  if (inTransaction) {
    try {
      return Promise.resolve(connection.run<R>(query));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const { gate } = connection;
  if (gate.tryEnter()) {
    try {
      return connection.executeQuery<R>(query);
    } finally {
      gate.leave();
    }
  }
  return gate.enter().then(() => connection.executeQuery<R>(query).finally(() => gate.leave()));
}
