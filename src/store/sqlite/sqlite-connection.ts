import {
  CompiledQuery,
  Kysely,
  SelectQueryNode,
  SqliteDialect,
  Transaction,
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

/** One SQLite transaction shared by the logical transactions that joined it, and their promise of its commit. */
interface CommitGroup {
  readonly committed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

// Each logical transaction runs inside this savepoint, so its rollback undoes only its own writes.
const MEMBER_SAVEPOINT = 'palaver_tx';

/**
 * The SQLite connection of one Palaver process, with group commit.
 *
 * A commit is the expensive part of a small write: every page the transaction touched is written to the WAL again.
 * So transactions whose callers expect company (many conversations busy at once) do not commit one by one: the first
 * opens a SQLite transaction, the next ones join it, each in a savepoint of its own, and one COMMIT at the end of the
 * event loop's current turn makes all of them durable; each caller's promise resolves only then. Pages they share
 * (a session's row, the tail of the messages table, index leaves) are written once for all of them.
 *
 * Everything else keeps plain semantics: a statement outside a transaction, or a transaction that did not ask to
 * be grouped, commits the open group together with itself before it returns.
 */
export class SqliteConnection implements DatabaseConnection {
  readonly #database: SqliteDatabase;
  readonly #gate: ConnectionGate;
  #group: CommitGroup | undefined;
  /** The group the current holder's transaction joined, while it runs; undefined outside a transaction. */
  #memberOf: CommitGroup | undefined;
  /** Whether the running transaction has a savepoint of its own (the one that opened the group needs none). */
  #memberSavepoint = false;
  /** Whether the running transaction's commit may wait for the group's (see {@link transaction}). */
  #memberSharesCommit = false;
  #flushScheduled = false;

  constructor(database: SqliteDatabase, gate: ConnectionGate) {
    this.#database = database;
    this.#gate = gate;
  }

  /** Whoever runs statements on this connection holds this gate. */
  get gate(): ConnectionGate {
    return this.#gate;
  }

  /** Runs one statement now (the caller holds the gate). */
  run<R>(query: { readonly sql: string; readonly parameters: readonly unknown[] }): QueryResult<R> {
    const statement = this.#database.prepare(query.sql);
    if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(query.parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }

  /**
   * Runs a statement for the current holder. Outside a transaction, an open group is committed with it, so the
   * result is durable when it is returned.
   */
  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const result = this.run<R>(query);
      if (this.#memberOf === undefined) this.commitGroup();
      return Promise.resolve(result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams only select queries');
    for (const row of this.#database.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
  }

  /**
   * Starts a logical transaction: opens a group, or joins the open one in a savepoint, so that its rollback undoes
   * only its own writes. (The transaction that opens a group runs before any other joins, so it needs no savepoint.)
   */
  begin(): void {
    this.#memberSavepoint = this.#group !== undefined;
    if (this.#memberSavepoint) {
      this.run(CompiledQuery.raw(`savepoint ${MEMBER_SAVEPOINT}`));
    } else {
      this.run(CompiledQuery.raw('begin'));
      this.#group = newGroup();
    }
    this.#memberOf = this.#group;
    this.#memberSharesCommit = false;
  }

  /** Ends the running transaction's savepoint, keeping its writes in the group; commits now unless it may wait. */
  commit(): void {
    const group = this.#memberOf;
    this.#memberOf = undefined;
    if (group === undefined) throw new Error('No transaction is running on this SQLite connection.');
    if (group !== this.#group) throw new Error('SQLite rolled this transaction back after an earlier error; it cannot commit.');
    try {
      if (this.#memberSavepoint) this.run(CompiledQuery.raw(`release ${MEMBER_SAVEPOINT}`));
    } catch (error) {
      this.#failGroup(error);
      throw error;
    }
    if (this.#memberSharesCommit) this.#scheduleFlush();
    else this.commitGroup();
  }

  /** Undoes the running transaction's writes, leaving the rest of the group as it was. */
  rollback(): void {
    const group = this.#memberOf;
    this.#memberOf = undefined;
    // The group already failed (SQLite rolled everything back): nothing left to undo.
    if (group === undefined || group !== this.#group) return;
    if (!this.#memberSavepoint) {
      // It opened the group and nobody joined yet: the whole SQLite transaction is its own.
      this.#group = undefined;
      try {
        this.run(CompiledQuery.raw('rollback'));
      } catch {
        // SQLite rolled it back already.
      }
      group.resolve();
      return;
    }
    try {
      this.run(CompiledQuery.raw(`rollback to ${MEMBER_SAVEPOINT}`));
      this.run(CompiledQuery.raw(`release ${MEMBER_SAVEPOINT}`));
    } catch (error) {
      this.#failGroup(error);
      return;
    }
    this.#scheduleFlush();
  }

  /** Commits the open group now (the caller holds the gate). */
  commitGroup(): void {
    const group = this.#group;
    if (group === undefined) return;
    try {
      this.run(CompiledQuery.raw('commit'));
    } catch (error) {
      this.#failGroup(error);
      throw error;
    }
    this.#group = undefined;
    group.resolve();
  }

  /**
   * Runs `work` as one transaction (see {@link begin}), holding the gate throughout. With `shareCommit` it resolves
   * once the group it joined has committed. Errors of `work` come back as they are; a failing BEGIN or COMMIT is
   * passed through `wrap` first.
   */
  async transaction<T>(work: () => Promise<T>, options: { readonly shareCommit: boolean; readonly wrap: (error: unknown) => Error }): Promise<T> {
    if (!this.#gate.tryEnter()) await this.#gate.enter();
    let result: T;
    let committed: Promise<void> | undefined;
    try {
      try {
        this.begin();
      } catch (error) {
        throw options.wrap(error);
      }
      if (options.shareCommit) {
        this.#memberSharesCommit = true;
        committed = this.#memberOf?.committed;
      }
      try {
        result = await work();
      } catch (error) {
        this.rollback();
        throw error;
      }
      try {
        this.commit();
      } catch (error) {
        throw options.wrap(error);
      }
    } finally {
      this.#gate.leave();
    }
    if (committed !== undefined) await committed.catch((error: unknown) => Promise.reject(options.wrap(error)));
    return result;
  }

  /** Waits for the gate, then commits the open group. */
  async flush(): Promise<void> {
    await this.#gate.enter();
    try {
      this.commitGroup();
    } finally {
      this.#gate.leave();
    }
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    // After the I/O callbacks of this loop turn: the transactions they started all make it into the group.
    setImmediate(() => {
      this.#flushScheduled = false;
      // A failed COMMIT has already rejected the group's promise, which its members await.
      this.flush().catch(() => {});
    });
  }

  #failGroup(error: unknown): void {
    const group = this.#group;
    this.#group = undefined;
    try {
      this.run(CompiledQuery.raw('rollback'));
    } catch {
      // SQLite may have rolled back already.
    }
    group?.reject(error);
  }
}

function newGroup(): CommitGroup {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const committed = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Members that rolled back do not wait for the group; its failure reaches those that do.
  committed.catch(() => {});
  return { committed, resolve, reject };
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

// Keyed by the Kysely adapter, which a database shares with every transaction on it.
const connections = new WeakMap<object, SqliteConnection>();

/** The connection of a gated SQLite Kysely and the one transaction-bound Kysely its transactions run on. */
export interface GatedSqlite {
  readonly connection: SqliteConnection;
  /**
   * Bound to the connection without the gate: valid only inside `connection.transaction`, which holds the gate.
   * One object serves every transaction, since they run one at a time.
   */
  readonly trx: Kysely<Database>;
}

const gatedDatabases = new WeakMap<Kysely<Database>, GatedSqlite>();

/** The gated connection behind `db` (not a transaction on it), or undefined for any other Kysely. */
export function gatedSqliteOf(db: Kysely<Database>): GatedSqlite | undefined {
  return gatedDatabases.get(db);
}

/**
 * A Kysely on one SQLite connection whose queries, transactions and direct statements ({@link runDirect}) all take
 * turns through `gate`. `close` runs when Kysely is destroyed, after the last group is committed.
 */
export function createGatedSqliteKysely(database: SqliteDatabase, gate: ConnectionGate, close: () => Promise<void>): { db: Kysely<Database>; connection: SqliteConnection } {
  const connection = new SqliteConnection(database, gate);
  const dialect = new (class extends SqliteDialect {
    override createDriver(): Driver {
      return new GatedSqliteDriver(connection, gate, close);
    }
  })({ database });
  const db = new Kysely<Database>({ dialect });
  connections.set(db.getExecutor().adapter, connection);
  // Kysely's own transaction() acquires the connection, builds a Transaction and chains promises per query; the
  // store's transactions take the gate themselves and reuse this one.
  const held = db.getExecutor().withConnectionProvider({ provideConnection: (consume) => consume(connection) });
  const trx = new Transaction<Database>({ config: { dialect }, dialect, driver: new GatedSqliteDriver(connection, gate, close), executor: held });
  gatedDatabases.set(db, { connection, trx });
  return { db, connection };
}

/** True when `db` (or a transaction on it) was made by {@link createGatedSqliteKysely}. */
export function isGatedSqlite(db: Kysely<Database>): boolean {
  return connections.has(db.getExecutor().adapter);
}

/**
 * Runs a compiled query straight on the connection, skipping Kysely's executor (a chain of promises per query that
 * costs more than SQLite's own work for the small statements of a turn). Inside a transaction the transaction holds
 * the gate already; outside, the statement runs at once when the gate is free and waits its turn otherwise.
 * Returns undefined when `db` is not a gated SQLite Kysely.
 */
export function runDirect<R>(db: Kysely<Database>, query: CompiledQuery): Promise<QueryResult<R>> | undefined {
  const connection = connections.get(db.getExecutor().adapter);
  if (connection === undefined) return undefined;
  if (db.isTransaction) {
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
