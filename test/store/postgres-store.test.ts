import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import { migrateToLatest, migrations, openPostgresDatabase, openStore } from '../../src/store/index.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { runOperatorQueriesContract } from './operator-queries-contract.js';
import { runStoreContract } from './store-contract.js';

// No skip: an unreachable server makes beforeAll — and so this file — fail with a message saying how to fix it.
let database: TestPostgresDatabase;

beforeAll(async () => {
  database = await createTestPostgresDatabase();
  await (await openStore(database.url)).close();
});

afterAll(async () => {
  await database?.drop();
});

// Migrated once in beforeAll; every test gets its own pool on the shared database.
runStoreContract('PostgreSQL', async () => {
  const store = await openStore(database.url, { migrate: false });
  return { store, cleanup: () => store.close() };
});
runOperatorQueriesContract('PostgreSQL', async () => {
  const store = await openStore(database.url, { migrate: false });
  return { store, cleanup: () => store.close() };
});

describe('PostgreSQL store', () => {
  // The production pool: its error listener matters here, since dropping a database ends connections still closing.
  function rawDatabase(url: string) {
    return openPostgresDatabase(url, { poolSize: 2 });
  }

  it('applies migrations once, also when several processes race', async () => {
    const fresh = await createTestPostgresDatabase();
    const dbs = await Promise.all([rawDatabase(fresh.url), rawDatabase(fresh.url)]);
    try {
      const applied = await Promise.all(dbs.map((db) => migrateToLatest(db)));
      expect(applied.flat()).toEqual(Object.keys(migrations('postgres')));
      expect(await migrateToLatest(dbs[0]!)).toEqual([]);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
      await fresh.drop();
    }
  });

  it('names the failing migration and leaves no half-applied schema', async () => {
    const fresh = await createTestPostgresDatabase();
    const db = await rawDatabase(fresh.url);
    try {
      await sql`create table sessions (id text)`.execute(db);
      const error = await migrateToLatest(db).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ code: 'migration_failed', message: expect.stringContaining('0001_initial') });
      const { rows } = await sql<{ n: string }>`select count(*) as n from information_schema.tables where table_name = 'users'`.execute(db);
      expect(Number(rows[0]?.n)).toBe(0);
    } finally {
      await db.destroy();
      await fresh.drop();
    }
  });

  it('stores money as numeric(20, 10)', async () => {
    const db = await rawDatabase(database.url);
    try {
      const { rows } = await sql<{ data_type: string; numeric_precision: number; numeric_scale: number }>`
        select data_type, numeric_precision, numeric_scale from information_schema.columns
        where table_name = 'messages' and column_name = 'cost'`.execute(db);
      expect(rows[0]).toEqual({ data_type: 'numeric', numeric_precision: 20, numeric_scale: 10 });
    } finally {
      await db.destroy();
    }
  });

  it('reports an unreachable server clearly, without the password', async () => {
    const error = await openStore('postgres://palaver:secret@127.0.0.1:1/nowhere', { connectTimeoutMs: 2_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'unreachable', message: expect.stringContaining('127.0.0.1:1') });
    expect((error as Error).message).not.toContain('secret');
  });
});
