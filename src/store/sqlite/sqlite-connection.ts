import { CompiledQuery, SelectQueryNode, type DatabaseConnection, type QueryResult, type SqliteDatabase } from 'kysely';
import type { ConnectionGate } from './connection-gate.js';

/** One SQLite transaction shared by the logical transactions that joined it, and their promise of its commit. */
interface CommitGroup {
  readonly committed: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
  /** Logical transactions whose writes it holds. */
  members: number;
}

// Each logical transaction but the first of a group runs inside this savepoint, so its rollback undoes only its own
// writes.
const MEMBER_SAVEPOINT = 'palaver_tx';
// Immediate: the write lock is taken (waiting up to busy_timeout) when the group begins. A deferred transaction
// that reads and then writes fails at once with "database is locked" when another process on the same file wrote
// since its read began, and waiting cannot help it.
const BEGIN = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const SAVEPOINT = CompiledQuery.raw(`savepoint ${MEMBER_SAVEPOINT}`);
const RELEASE = CompiledQuery.raw(`release ${MEMBER_SAVEPOINT}`);
const ROLLBACK_TO = CompiledQuery.raw(`rollback to ${MEMBER_SAVEPOINT}`);

/**
 * Consecutive turns of the event loop with more than one commit after which commits count as overlapping. One such
 * turn is no evidence: a caller that runs two transactions one after the other commits twice in one turn, and
 * those two could never have shared a commit.
 */
const BUSY_TURNS_TO_SHARE = 2;

/**
 * The SQLite connection of one Palaver process, with group commit decided here, from what the connection sees.
 *
 * A commit is the expensive part of a small write: every page the transaction touched is written to the WAL again.
 * So transactions that end close together share one COMMIT: the first opens a SQLite transaction, the next ones join
 * it, each in a savepoint of its own, and one COMMIT makes all of them durable; each caller's promise resolves only
 * then. Pages they share (a session's row, the tail of the messages table, index leaves) are written once.
 *
 * When a transaction ends, its group is committed at once unless company is certain or likely:
 * - another holder already waits at the gate: it runs next and joins (or, if it is no transaction, commits the
 *   group with its own statement);
 * - commits overlap: several transactions committed within each of the last turns of the event loop, so the
 *   connection shares commits from then on, each at the end of the loop's turn (after the I/O callbacks that started
 *   the others), until a shared commit finds nobody to share with.
 * A quiet store therefore commits every transaction at once, with no added latency.
 *
 * A statement outside a transaction, a transaction run through Kysely's own driver, the checkpointer's quiet moment
 * and closing the database all commit the open group before they go on.
 */
export class SqliteConnection implements DatabaseConnection {
  readonly #database: SqliteDatabase;
  readonly #gate: ConnectionGate;
  #group: CommitGroup | undefined;
  /** The group the current holder's transaction joined, while it runs; undefined outside a transaction. */
  #memberOf: CommitGroup | undefined;
  /** Whether the running transaction has a savepoint of its own (the one that opened the group needs none). */
  #memberSavepoint = false;
  /** Commits overlap: transactions that end wait for the shared commit at the end of the loop's turn. */
  #sharing = false;
  /** Transactions committed on their own in the current turn of the event loop. */
  #commitsThisTurn = 0;
  /** Consecutive past turns of the loop with more than one commit. */
  #busyTurns = 0;
  #flushScheduled = false;
  readonly #endOfTurn = (): void => {
    this.#busyTurns = this.#commitsThisTurn > 1 ? this.#busyTurns + 1 : 0;
    this.#commitsThisTurn = 0;
    if (this.#busyTurns >= BUSY_TURNS_TO_SHARE) this.#sharing = true;
  };
  readonly #scheduledFlush = (): void => {
    this.#flushScheduled = false;
    // A failed COMMIT has already rejected the group's promise, which its members await.
    this.flush().catch(() => {});
  };

  /** Told after every statement that writes (the WAL checkpointer wakes its worker with it); cheap, never throws. */
  onWrite: (() => void) | undefined;

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
    this.onWrite?.();
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
   * Runs `work(arg)` as one transaction, holding the gate throughout, and resolves once the group it joined has
   * committed. Errors of `work` come back as they are, after its writes were undone (and only its writes); a
   * failing BEGIN or COMMIT is passed through `wrap` first.
   */
  async transaction<A, T>(work: (arg: A) => Promise<T>, arg: A, wrap: (error: unknown) => Error): Promise<T> {
    if (!this.#gate.tryEnter()) await this.#gate.enter();
    let result: T;
    let committed: Promise<void> | undefined;
    try {
      try {
        this.begin();
      } catch (error) {
        throw wrap(error);
      }
      try {
        result = await work(arg);
      } catch (error) {
        this.rollback();
        try {
          this.#settle();
        } catch {
          // A failed COMMIT of the others' writes reaches them through the group's promise.
        }
        throw error;
      }
      try {
        committed = this.#end();
      } catch (error) {
        throw wrap(error);
      }
    } finally {
      this.#gate.leave();
    }
    if (committed !== undefined) await committed.catch((error: unknown) => Promise.reject(wrap(error)));
    return result;
  }

  /**
   * Starts a logical transaction: opens a group, or joins the open one in a savepoint, so that its rollback undoes
   * only its own writes. (The transaction that opens a group runs before any other joins, so it needs no savepoint.)
   */
  begin(): void {
    this.#memberSavepoint = this.#group !== undefined;
    if (this.#memberSavepoint) {
      this.run(SAVEPOINT);
    } else {
      this.run(BEGIN);
      this.#group = newGroup();
    }
    this.#memberOf = this.#group;
  }

  /** Ends the running transaction and commits its group now (Kysely's driver cannot wait for a later commit). */
  commit(): void {
    this.#release();
    this.commitGroup();
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
        this.run(ROLLBACK);
      } catch {
        // SQLite rolled it back already.
      }
      group.resolve();
      return;
    }
    try {
      this.run(ROLLBACK_TO);
      this.run(RELEASE);
    } catch (error) {
      this.#failGroup(error);
    }
  }

  /** Commits the open group now (the caller holds the gate). */
  commitGroup(): void {
    const group = this.#group;
    if (group === undefined) return;
    try {
      this.run(COMMIT);
    } catch (error) {
      this.#failGroup(error);
      throw error;
    }
    this.#group = undefined;
    group.resolve();
  }

  /** Waits for the gate, then commits the open group. */
  async flush(): Promise<void> {
    await this.#gate.enter();
    try {
      const members = this.#group?.members ?? 0;
      this.commitGroup();
      // A shared commit that served one transaction only delayed it: commit at once again until commits overlap.
      if (members <= 1) {
        this.#sharing = false;
        this.#busyTurns = 0;
      }
    } finally {
      this.#gate.leave();
    }
  }

  /**
   * Ends the running transaction's savepoint, keeping its writes in the group, and commits the group unless company
   * is expected (see the class). Returns the group's commit when it is left open, undefined when it is committed.
   */
  #end(): Promise<void> | undefined {
    const group = this.#release();
    return this.#settle() ? undefined : group.committed;
  }

  /** Ends the running transaction's savepoint, keeping its writes in the group. */
  #release(): CommitGroup {
    const group = this.#memberOf;
    this.#memberOf = undefined;
    if (group === undefined) throw new Error('No transaction is running on this SQLite connection.');
    if (group !== this.#group) throw new Error('SQLite rolled this transaction back after an earlier error; it cannot commit.');
    try {
      if (this.#memberSavepoint) this.run(RELEASE);
    } catch (error) {
      this.#failGroup(error);
      throw error;
    }
    group.members += 1;
    return group;
  }

  /**
   * Decides about the open group when its latest transaction has ended: leaves it open when another holder waits
   * at the gate or commits overlap, commits it otherwise. Returns true when nothing is left open.
   */
  #settle(): boolean {
    if (this.#group === undefined) return true;
    if (this.#gate.contended) return false;
    if (this.#sharing) {
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        // After the I/O callbacks of this loop turn: the transactions they start all make it into the group.
        setImmediate(this.#scheduledFlush);
      }
      return false;
    }
    this.commitGroup();
    // Counted per turn of the loop; the turn's end decides whether commits overlap.
    if (this.#commitsThisTurn++ === 0) setImmediate(this.#endOfTurn);
    return true;
  }

  #failGroup(error: unknown): void {
    const group = this.#group;
    this.#group = undefined;
    try {
      this.run(ROLLBACK);
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
  return { committed, resolve, reject, members: 0 };
}
