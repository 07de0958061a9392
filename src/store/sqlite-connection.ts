import {
  CompiledQuery,
  Kysely,
  SelectQueryNode,
  SqliteDialect,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
} from 'kysely';
import type { Database } from './schema.js';

/**
 * The one SQLite connection has one holder at a time: a transaction, a query run through Kysely, or a statement run
 * directly. Waiters are served first come, first served; while any wait, the gate passes straight to the next one.
 */
export class ConnectionGate {
  #held = false;
  readonly #waiters: (() => void)[] = [];

  /** Takes the gate if it is free, without waiting. */
  tryEnter(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  enter(): Promise<void> {
    if (this.tryEnter()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  leave(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }
}

/**
 * The SQLite connection. Bindings are synchronous, so a statement runs to completion before `run` returns; Kysely
 * gets the same results as from its own SQLite driver.
 */
export class SqliteConnection implements DatabaseConnection {
  readonly #database: SqliteDatabase;

  constructor(database: SqliteDatabase) {
    this.#database = database;
  }

  run<R>(query: { readonly sql: string; readonly parameters: readonly unknown[] }): QueryResult<R> {
    const statement = this.#database.prepare(query.sql);
    if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(query.parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve(this.run<R>(query));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams only select queries');
    for (const row of this.#database.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }
}

/** Kysely's driver for the connection: the connection is held through the gate. */
class GatedSqliteDriver implements Driver {
  readonly #connection: SqliteConnection;
  readonly #gate: ConnectionGate;
  readonly #close: () => Promise<void>;

  constructor(connection: SqliteConnection, gate: ConnectionGate, close: () => Promise<void>) {
    this.#connection = connection;
    this.#gate = gate;
    this.#close = close;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#gate.enter();
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    this.#gate.leave();
  }

  async beginTransaction(): Promise<void> {
    this.#connection.run(CompiledQuery.raw('begin'));
  }

  async commitTransaction(): Promise<void> {
    this.#connection.run(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(): Promise<void> {
    this.#connection.run(CompiledQuery.raw('rollback'));
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

  destroy(): Promise<void> {
    return this.#close();
  }
}

function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** The gate and connection behind a Kysely made by {@link createGatedSqliteKysely}. */
interface DirectAccess {
  readonly gate: ConnectionGate;
  readonly connection: SqliteConnection;
}

// Keyed by the Kysely adapter, which a database shares with every transaction on it.
const directAccess = new WeakMap<object, DirectAccess>();

/**
 * A Kysely on one SQLite connection whose queries, transactions and direct statements ({@link runDirect}) all take
 * turns through `gate`. `close` runs when Kysely is destroyed.
 */
export function createGatedSqliteKysely(database: SqliteDatabase, gate: ConnectionGate, close: () => Promise<void>): Kysely<Database> {
  const connection = new SqliteConnection(database);
  const dialect = new (class extends SqliteDialect {
    override createDriver(): Driver {
      return new GatedSqliteDriver(connection, gate, close);
    }
  })({ database });
  const db = new Kysely<Database>({ dialect });
  directAccess.set(db.getExecutor().adapter, { gate, connection });
  return db;
}

/** True when `db` (or a transaction on it) was made by {@link createGatedSqliteKysely}. */
export function isGatedSqlite(db: Kysely<Database>): boolean {
  return directAccess.has(db.getExecutor().adapter);
}

/**
 * Runs a compiled query straight on the connection, skipping Kysely's executor (a chain of promises per query that
 * costs more than SQLite's own work for the small statements of a turn). Inside a transaction the transaction holds
 * the gate already; outside, the statement runs at once when the gate is free and waits its turn otherwise.
 * Returns undefined when `db` is not a gated SQLite Kysely.
 */
export function runDirect<R>(db: Kysely<Database>, query: CompiledQuery): Promise<QueryResult<R>> | undefined {
  const access = directAccess.get(db.getExecutor().adapter);
  if (access === undefined) return undefined;
  const { gate, connection } = access;
  if (db.isTransaction) return connection.executeQuery<R>(query);
  if (gate.tryEnter()) {
    try {
      return connection.executeQuery<R>(query);
    } finally {
      gate.leave();
    }
  }
  return gate.enter().then(() => {
    try {
      return connection.run<R>(query);
    } finally {
      gate.leave();
    }
  });
}
