import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Kysely, SqliteDialect, sql, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import { KyselyStore, migrateToLatest, migrations, openSqliteDatabase, openStore, type Database } from '../../src/store/index.js';
import type { Store } from '../../src/domain/ports/store.js';
import { runOperatorQueriesContract } from './operator-queries-contract.js';
import { runStoreContract } from './store-contract.js';

let dir: string;
let files = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-sqlite-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// A fresh file per test (in a folder openStore has to make).
const nextUrl = (): string => `sqlite:${join(dir, `nested/dir/store-${(files += 1)}.db`)}`;

// The contracts' tests each get a copy of one file migrated once: migrating took most of each test's time, and
// openStore still checks the copy's migrations. Migrating itself is tested above and in migrations.test.ts.
let template: Promise<string> | undefined;
async function migratedStore(): Promise<Store> {
  template ??= (async () => {
    const url = nextUrl();
    await (await openStore(url)).close();
    return url.slice('sqlite:'.length);
  })();
  const file = join(dir, 'copies', `store-${(files += 1)}.db`);
  await mkdir(join(dir, 'copies'), { recursive: true });
  await copyFile(await template, file);
  return openStore(`sqlite:${file}`);
}

runStoreContract('SQLite file', async () => {
  const store = await migratedStore();
  return { store, cleanup: () => store.close() };
});
runOperatorQueriesContract('SQLite file', async () => {
  const store = await migratedStore();
  return { store, cleanup: () => store.close() };
});

// A SQLite Kysely made by the application, not by openSqliteDatabase: no statement cache, no palaver_add_cost
// function (addUsage falls back to read-modify-write), and a plugin (prepared queries fall back to building per call).
// It uses better-sqlite3, so it runs only where Palaver itself uses better-sqlite3 (Node 20): on Node 24 the GC can
// abort the process while finalising a better-sqlite3 object, which is why Palaver uses node:sqlite there.
const hasNodeSqlite =
  typeof (process.getBuiltinModule?.('node:sqlite') as { StatementSync?: { prototype?: { columns?: unknown } } } | undefined)?.StatementSync?.prototype
    ?.columns === 'function';
const passThrough: KyselyPlugin = { transformQuery: ({ node }) => node, transformResult: async ({ result }) => result };
const BetterSqlite3 = ((): typeof import('better-sqlite3') | undefined => {
  if (hasNodeSqlite) return undefined;
  try {
    const loaded = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
    new loaded(':memory:').close();
    return loaded;
  } catch {
    return undefined;
  }
})();
if (BetterSqlite3)
  runStoreContract('SQLite on a plain Kysely', async () => {
    const file = join(dir, `plain-${(files += 1)}.db`);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }), plugins: [passThrough] });
    await migrateToLatest(db);
    const store = new KyselyStore(db);
    return { store, cleanup: () => store.close() };
  });

describe('SQLite store', () => {
  it('runs in WAL mode with foreign keys on', async () => {
    const url = nextUrl();
    await (await openStore(url)).close();
    const db = openSqliteDatabase(url);
    try {
      const { rows: journal } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(db);
      const { rows: keys } = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
      expect(journal[0]?.journal_mode).toBe('wal');
      expect(keys[0]?.foreign_keys).toBe(1);
    } finally {
      await db.destroy();
    }
  });

  it('keeps data across close and reopen', async () => {
    const url = nextUrl();
    const first = await openStore(url);
    const { user } = await first.users.resolveAccount({ channel: 'console', accountId: 'me', displayName: 'Ada' });
    const session = await first.sessions.open({ userId: user.id, channel: 'console', conversationId: 'console' });
    await first.messages.append(session.id, [{ role: 'user', audience: 'display', content: 'remember me' }]);
    await first.sessions.addUsage(session.id, { inputTokens: 1, outputTokens: 2, cost: '0.0000000007', currency: 'USD' });
    await first.close();

    const second = await openStore(url);
    try {
      expect((await second.users.resolveAccount({ channel: 'console', accountId: 'me' })).user).toEqual(user);
      expect((await second.messages.listRecent(session.id, { limit: 5 })).map((m) => m.content)).toEqual(['remember me']);
      expect((await second.sessions.findById(session.id))?.cost).toBe('0.0000000007');
    } finally {
      await second.close();
    }
  });

  it('opens an in-memory database', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      await expect(store.ping()).resolves.toBeUndefined();
      expect((await store.users.resolveAccount({ channel: 'console', accountId: 'k' })).created).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('applies migrations once', async () => {
    const db = openSqliteDatabase(nextUrl());
    try {
      expect(await migrateToLatest(db)).toEqual(Object.keys(migrations('sqlite')));
      expect(await migrateToLatest(db)).toEqual([]);
    } finally {
      await db.destroy();
    }
  });

  it('names the failing migration', async () => {
    const db = openSqliteDatabase(nextUrl());
    try {
      await sql`create table users (id text)`.execute(db);
      const error = await migrateToLatest(db).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ code: 'migration_failed', message: expect.stringContaining('0001_initial') });
    } finally {
      await db.destroy();
    }
  });

  it('hands back a corrupt state row as its raw text, for the runtime to replace', async () => {
    const db = openSqliteDatabase(nextUrl());
    await migrateToLatest(db);
    const store = new KyselyStore(db);
    try {
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: 'max' });
      await sql`insert into user_state (user_id, version, data, updated_at) values (${user.id}, 3, '{not json', 0)`.execute(db);
      expect(await store.userState.get(user.id)).toMatchObject({ raw: '{not json', version: 3 });
      expect(await store.userState.save(user.id, { ok: true }, 3)).toBe(4);
    } finally {
      await store.close();
    }
  });

  it('refuses an unknown URL scheme', async () => {
    await expect(openStore('mssql://localhost/db')).rejects.toMatchObject({ name: 'StoreError', code: 'invalid_url' });
  });

  it('opens without migrating when told so', async () => {
    const store = await openStore(nextUrl(), { migrate: false });
    try {
      await expect(store.users.resolveAccount({ channel: 'console', accountId: 'k' })).rejects.toMatchObject({ name: 'StoreError', code: 'query_failed' });
    } finally {
      await store.close();
    }
  });
});
