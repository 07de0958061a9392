import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { KyselyStore, migrateToLatest, openSqliteDatabase, type Database } from '../../src/store/index.js';
import { engineOf } from '../../src/store/kysely/store-engine.js';
import { WalCheckpointer, type WalCheckpointerOptions } from '../../src/store/sqlite/wal-checkpointer.js';
import { openSqliteFile } from '../support/sqlite-file.js';

let dir: string;
let files = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-sqlite-connection-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A second connection to the same file, the way another process would see it. */
function otherConnection(path: string): { count(table: string): number; close(): void } {
  const database = openSqliteFile(path, { writable: true });
  return {
    count: (table) => Number(database.get<{ n: number | bigint }>(`select count(*) as n from ${table}`)?.n),
    close: () => database.close(),
  };
}

async function givenStore(options: Parameters<typeof openSqliteDatabase>[1] = {}): Promise<{ path: string; db: Kysely<Database>; store: Store }> {
  const path = join(dir, `db-${(files += 1)}.sqlite`);
  const db = openSqliteDatabase(`sqlite:${path}`, options);
  await migrateToLatest(db);
  return { path, db, store: new KyselyStore(db) };
}

async function givenSession(store: Store, name: string) {
  const { user } = await store.users.resolveAccount({ channel: 'test', accountId: name });
  return store.sessions.open({ userId: user.id, channel: 'test', conversationId: name });
}

const say = (content: string) => ({ role: 'user' as const, audience: 'display' as const, content });

/** Resolves in the check phase of the event loop's current turn, after its I/O callbacks. */
const endOfLoopTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Starts `work` in separate callbacks of one turn of the event loop, the way the I/O callbacks of several busy
 * conversations would (each runs to its end before the next begins, so none waits at the connection's gate).
 */
function inCallbacksOfOneLoopTurn<T>(works: readonly (() => Promise<T>)[]): Promise<T>[] {
  return works.map((work) => new Promise<T>((resolve, reject) => setImmediate(() => work().then(resolve, reject))));
}

let warmUps = 0;

/** Two loop turns, each with two transactions committing in callbacks of their own, as under steady load. */
async function givenOverlappingCommits(store: Store): Promise<void> {
  for (let turn = 0; turn < 2; turn += 1) {
    await Promise.all(
      inCallbacksOfOneLoopTurn(
        [1, 2].map(() => () => store.transaction((tx) => tx.users.resolveAccount({ channel: 'warm-up', accountId: `key-${(warmUps += 1)}` }))),
      ),
    );
  }
  await endOfLoopTurn();
}

describe('SQLite group commit, decided by the connection', () => {
  it('commits at once transactions run one after another in one turn of the event loop', async () => {
    const { path, store } = await givenStore();
    const session = await givenSession(store, 'a');
    const other = otherConnection(path);
    try {
      // Many commits in one loop turn, but each transaction begins after the previous one resolved: none can share.
      let loopMovedOn = false;
      setImmediate(() => (loopMovedOn = true));
      for (let index = 0; index < 10; index += 1) {
        await store.transaction((tx) => tx.messages.append(session.id, [say(`${index}`)]));
        expect(other.count('messages')).toBe(index + 1);
      }
      expect(loopMovedOn).toBe(false);
      await endOfLoopTurn();
      setImmediate(() => (loopMovedOn = false));
      await store.transaction((tx) => tx.messages.append(session.id, [say('next turn')]));
      expect(loopMovedOn).toBe(true);
      expect(other.count('messages')).toBe(11);
    } finally {
      other.close();
      await store.close();
    }
  });

  it('commits a lone transaction at once, before the event loop moves on', async () => {
    const { path, store } = await givenStore();
    const session = await givenSession(store, 'a');
    const other = otherConnection(path);
    try {
      let loopMovedOn = false;
      setImmediate(() => (loopMovedOn = true));
      await store.transaction((tx) => tx.messages.append(session.id, [say('alone')], { status: 'running' }));
      expect(loopMovedOn).toBe(false);
      expect(other.count('messages')).toBe(1);
    } finally {
      other.close();
      await store.close();
    }
  });

  it('shares one commit among transactions that queue for the connection, each resolving only once it is durable', async () => {
    const { path, store } = await givenStore();
    const sessions = await Promise.all(Array.from({ length: 20 }, (_, index) => givenSession(store, `s${index}`)));
    const other = otherConnection(path);
    try {
      const before = other.count('messages');
      const seenAtResolve: number[] = [];
      // Started together: all but the first wait at the gate and join the first one's commit.
      await Promise.all(
        sessions.map((session) =>
          store
            .transaction((tx) => tx.messages.append(session.id, [say(`hi ${session.conversationId}`)]))
            .then(() => seenAtResolve.push(other.count('messages') - before)),
        ),
      );
      // Each resolved only after the shared COMMIT: another connection saw all twenty rows every time.
      expect(seenAtResolve).toEqual(Array(20).fill(20));
    } finally {
      other.close();
      await store.close();
    }
  });

  it('shares commits once they overlap within a turn of the event loop, and commits at once again when quiet', async () => {
    const { path, store } = await givenStore();
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((name) => givenSession(store, name)));
    const other = otherConnection(path);
    const append = (session: typeof a, text: string) => () => store.transaction((tx) => tx.messages.append(session!.id, [say(text)]));
    const contents = (session: typeof a) => store.messages.listRecent(session!.id, { limit: 10 }).then((messages) => messages.map((m) => m.content));
    try {
      // Two commits in each of two loop turns: the connection learns that commits overlap.
      await givenOverlappingCommits(store);
      // Now transactions ending in one loop turn share a commit at its end: when the first resolves, the other's
      // row is durable too, and neither resolved before its own row was.
      const rowsAtResolve: number[] = [];
      const before = other.count('messages');
      await Promise.all(
        inCallbacksOfOneLoopTurn([append(a, 'a2'), append(b, 'b2')]).map((done) => done.then(() => rowsAtResolve.push(other.count('messages') - before))),
      );
      expect(rowsAtResolve).toEqual([2, 2]);
      // A shared commit that finds one transaction only: the connection goes back to committing at once.
      await append(c, 'c1')();
      let loopMovedOn = false;
      setImmediate(() => (loopMovedOn = true));
      await append(c, 'c2')();
      expect(loopMovedOn).toBe(false);
      expect(other.count('messages')).toBe(before + 4);
      expect(await contents(a)).toEqual(['a2']);
      expect(await contents(b)).toEqual(['b2']);
      expect(await contents(c)).toEqual(['c1', 'c2']);
    } finally {
      other.close();
      await store.close();
    }
  });

  it('rolls back only the transaction that failed, keeping the others that share its commit', async () => {
    const { store } = await givenStore();
    const [a, b] = await Promise.all([givenSession(store, 'a'), givenSession(store, 'b')]);
    try {
      const results = await Promise.allSettled([
        store.transaction((tx) => tx.messages.append(a.id, [say('kept 1')])),
        store.transaction(async (tx) => {
          await tx.messages.append(b.id, [say('undone')]);
          throw new Error('the turn went wrong');
        }),
        store.transaction((tx) => tx.messages.append(a.id, [say('kept 2')])),
      ]);
      expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect(String((results[1] as PromiseRejectedResult).reason)).toContain('the turn went wrong');
      expect((await store.messages.listRecent(a.id, { limit: 5 })).map((m) => m.content)).toEqual(['kept 1', 'kept 2']);
      expect(await store.messages.listRecent(b.id, { limit: 5 })).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('fails every transaction of a group whose commit fails, and keeps none of their writes', async () => {
    const { db, store } = await givenStore();
    const session = await givenSession(store, 'a');
    const engine = engineOf(db)!;
    /** A transaction on the engine with SQL of its own, as the store's transactions run. */
    const transaction = (work: (trx: Kysely<Database>) => Promise<unknown>): Promise<unknown> => engine.transaction(work, (error) => error as Error);
    try {
      const results = await Promise.allSettled([
        transaction((trx) => new KyselyStore(trx).messages.append(session.id, [say('lost with the group')])),
        transaction(async (trx) => {
          // A foreign key checked only at COMMIT: the group's COMMIT fails.
          await sql`pragma defer_foreign_keys = on`.execute(trx);
          await sql`insert into channel_accounts (channel, account_id, user_id, created_at) values ('test', 'ghost', 'no-such-user', 0)`.execute(trx);
        }),
      ]);
      expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
      expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY/i);
      expect(await store.messages.listRecent(session.id, { limit: 5 })).toEqual([]);
      // The connection is usable afterwards.
      await store.messages.append(session.id, [say('after')]);
      expect((await store.messages.listRecent(session.id, { limit: 5 })).map((m) => m.content)).toEqual(['after']);
    } finally {
      await store.close();
    }
  });

  /** Makes the connection share commits (two overlap in one loop turn), then starts a transaction left pending. */
  async function givenPendingSharedCommit(store: Store, session: { id: string }): Promise<Promise<unknown>> {
    await givenOverlappingCommits(store);
    let settled = false;
    const pending = store.transaction((tx) => tx.messages.append(session.id, [say('pending')])).finally(() => (settled = true));
    // The transaction has ended but waits for the shared commit at the end of the loop's turn.
    await Promise.resolve();
    await Promise.resolve();
    expect(settled).toBe(false);
    return pending;
  }

  it('commits a pending shared commit before a statement outside any transaction returns', async () => {
    const { path, store } = await givenStore();
    const session = await givenSession(store, 'a');
    const other = otherConnection(path);
    try {
      const pending = await givenPendingSharedCommit(store, session);
      await store.users.resolveAccount({ channel: 'probe', accountId: 'key-1' });
      expect(other.count('messages')).toBe(1);
      expect(other.count("channel_accounts where channel = 'probe'")).toBe(1);
      await pending;
    } finally {
      other.close();
      await store.close();
    }
  });

  it('commits a pending shared commit when the database closes', async () => {
    const { path, store } = await givenStore();
    const session = await givenSession(store, 'a');
    const pending = await givenPendingSharedCommit(store, session);
    await store.close();
    await pending;
    const other = otherConnection(path);
    try {
      expect(other.count('messages')).toBe(1);
    } finally {
      other.close();
    }
  });
});

describe('SQLite checkpoints', () => {
  it('stay with SQLite while writes are few, move to the worker once they are frequent, and the WAL is removed on close', async () => {
    const { path, db, store } = await givenStore();
    const autocheckpoint = async () => (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0]?.wal_autocheckpoint;
    try {
      const session = await givenSession(store, 'rate');
      for (let i = 0; i < 20; i += 1) await store.messages.append(session.id, [say(`few ${i}`)]);
      expect(await autocheckpoint()).toBe(1000);
      // 3000 writes within seconds, as a busy server makes: the worker takes the checkpoints over.
      for (let i = 0; i < 3_000; i += 1) await store.messages.append(session.id, [say(`many ${i}`)]);
      await expect.poll(autocheckpoint, { timeout: 5_000 }).toBe(0);
    } finally {
      await store.close();
    }
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('start the WAL over once it is long, so it does not grow without end under steady writes', async () => {
    const restartFrames = 200;
    const { path, store } = await givenStore({ checkpoints: { intervalMs: 5, restartFrames, startAfter: { writes: 0, withinMs: 0 } } });
    const session = await givenSession(store, 'a');
    try {
      for (let round = 0; round < 60; round += 1) {
        for (let i = 0; i < 20; i += 1) await store.messages.append(session.id, [say(`message ${round}.${i} ${'x'.repeat(2000)}`)]);
        // Let the checkpointer's messages in, as a server's event loop would between turns.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      // 1200 commits of about three pages each: some 3300 pages had the WAL never started over. Starting over at 200
      // leaves a few hundred, more on a busy machine where the worker runs late.
      const walPages = statSync(`${path}-wal`).size / 4096;
      expect(walPages).toBeLessThan(restartFrames * 12);
      expect((await store.messages.listRecent(session.id, { limit: 1 }))[0]?.content).toMatch(/^message 59\.19/);
    } finally {
      await store.close();
    }
  });

  it('end their thread while the database is idle, handing checkpoints back, and start it again when writes come', async () => {
    const { db, store } = await givenStore({ checkpoints: { intervalMs: 5, idleStopMs: 50, startAfter: { writes: 1, withinMs: 1_000 } } });
    const autocheckpoint = async () => (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0]?.wal_autocheckpoint;
    try {
      const session = await givenSession(store, 'idle');
      // Running: the worker has taken the checkpoints over (until it is ready SQLite's default, 1000, applies).
      await expect.poll(autocheckpoint, { timeout: 5_000 }).toBe(0);
      // Idle: the worker ends (its exit hands checkpoints back) and the main connection checkpoints for itself again.
      await expect.poll(autocheckpoint, { timeout: 5_000 }).toBe(1000);
      // A write wakes it: checkpoints leave the main connection again.
      await store.messages.append(session.id, [say('wake up')]);
      await expect.poll(autocheckpoint, { timeout: 5_000 }).toBe(0);
      expect((await store.messages.listRecent(session.id, { limit: 1 }))[0]?.content).toBe('wake up');
    } finally {
      await store.close();
    }
  });

  /** A checkpointer on `path` that records what it asks of the main connection and the warnings it emits. */
  function watchedCheckpointer(path: string, options: Partial<WalCheckpointerOptions> = {}) {
    const settings: number[] = [];
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    const checkpointer = new WalCheckpointer({
      path,
      binding: process.getBuiltinModule?.('node:sqlite') ? 'node' : 'better-sqlite3',
      intervalMs: 5,
      setAutoCheckpoint: (pages) => settings.push(pages),
      whileWritesPaused: (fn) => fn(),
      startAfter: { writes: 0, withinMs: 0 },
      ...options,
    });
    return {
      checkpointer,
      settings,
      warnings,
      stop: async () => {
        process.off('warning', onWarning);
        await checkpointer.stop();
      },
    };
  }

  it('start their thread only when enough writes come within the window', async () => {
    const { path, store } = await givenStore();
    await store.close();
    let now = 0;
    const watched = watchedCheckpointer(path, { startAfter: { writes: 3, withinMs: 1_000 }, now: () => now });
    try {
      watched.checkpointer.wake();
      now = 500;
      watched.checkpointer.wake();
      // The third write comes after the window: counting starts over.
      now = 1_600;
      watched.checkpointer.wake();
      now = 1_700;
      watched.checkpointer.wake();
      expect(watched.checkpointer.running).toBe(false);
      now = 1_800;
      watched.checkpointer.wake();
      expect(watched.checkpointer.running).toBe(true);
      await expect.poll(() => watched.settings, { timeout: 15_000 }).toEqual([0]);
    } finally {
      await watched.stop();
    }
  });

  it('leave checkpoints to the main connection when the worker cannot start, and say so', async () => {
    const notADatabase = join(dir, 'not-a-database.sqlite');
    await writeFile(notADatabase, 'this is plain text, not SQLite '.repeat(200));
    const watched = watchedCheckpointer(notADatabase);
    try {
      await expect.poll(() => watched.warnings.some((message) => message.includes('checkpointer')), { timeout: 15_000 }).toBe(true);
      expect(watched.settings).toEqual([]);
      expect(watched.checkpointer.active).toBe(false);
    } finally {
      await watched.stop();
    }
  });

  it('run in a worker started from a typed module of its own, which does nothing when merely imported', async () => {
    const workerModule = await import('../../src/store/sqlite/checkpoint-worker.js');
    expect(Object.keys(workerModule)).toEqual([]);
    const { path, store } = await givenStore();
    await store.close();
    const watched = watchedCheckpointer(path);
    try {
      await expect.poll(() => watched.checkpointer.active, { timeout: 15_000 }).toBe(true);
      expect(watched.warnings).toEqual([]);
    } finally {
      await watched.stop();
    }
  });

  it('hand checkpoints back to the main connection whenever the worker ends', async () => {
    const { path, store } = await givenStore();
    await store.close();
    const watched = watchedCheckpointer(path);
    await expect.poll(() => watched.settings, { timeout: 15_000 }).toEqual([0]);
    expect(watched.checkpointer.active).toBe(true);
    await watched.stop();
    expect(watched.settings).toEqual([0, 1000]);
    expect(watched.checkpointer.active).toBe(false);
  });
});
