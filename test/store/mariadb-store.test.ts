import { Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import { migrateToLatest, migrations, openStore, type Database } from '../../src/store/index.js';
import { openMysqlDatabase } from '../../src/store/mysql/open-mysql-database.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';
import { runOperatorQueriesContract } from './operator-queries-contract.js';
import { runStoreContract } from './store-contract.js';

// No skip: an unreachable server makes beforeAll — and so this file — fail with a message saying how to fix it.
let database: TestMariadbDatabase;

beforeAll(async () => {
  database = await createTestMariadbDatabase();
  await (await openStore(database.url)).close();
});

afterAll(async () => {
  await database?.drop();
});

// Migrated once in beforeAll; every test gets its own pool on the shared database.
runStoreContract('MariaDB', async () => {
  const store = await openStore(database.url, { migrate: false });
  return { store, cleanup: () => store.close() };
});
runOperatorQueriesContract('MariaDB', async () => {
  const store = await openStore(database.url, { migrate: false });
  return { store, cleanup: () => store.close() };
});

describe('MariaDB store', () => {
  // MariaDB commits every DDL statement to disk on its own: migrating a fresh database took 6 s here (2 busy cores).
  const migrating = 120_000;
  const rawDatabase = (url: string): Promise<Kysely<Database>> => openMysqlDatabase(url, { poolSize: 2 });

  it(
    'applies migrations once, also when several processes race',
    async () => {
      const fresh = await createTestMariadbDatabase();
      const dbs = await Promise.all([rawDatabase(fresh.url), rawDatabase(fresh.url)]);
      try {
        const applied = await Promise.all(dbs.map((db) => migrateToLatest(db)));
        expect(applied.flat()).toEqual(Object.keys(migrations('mysql')));
        expect(await migrateToLatest(dbs[0]!)).toEqual([]);
      } finally {
        await Promise.all(dbs.map((db) => db.destroy()));
        await fresh.drop();
      }
    },
    migrating,
  );

  it(
    'names the failing migration',
    async () => {
      const fresh = await createTestMariadbDatabase();
      const db = await rawDatabase(fresh.url);
      try {
        await sql`create table sessions (id varchar(10))`.execute(db);
        const error = await migrateToLatest(db).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(StoreError);
        expect(error).toMatchObject({ code: 'migration_failed', message: expect.stringContaining('0001_initial') });
      } finally {
        await db.destroy();
        await fresh.drop();
      }
    },
    migrating,
  );

  it('stores money as decimal(20, 10) and text in utf8mb4 with a binary collation', async () => {
    const db = await rawDatabase(database.url);
    try {
      const { rows } = await sql<{ DATA_TYPE: string; NUMERIC_PRECISION: number; NUMERIC_SCALE: number }>`
        select data_type as DATA_TYPE, numeric_precision as NUMERIC_PRECISION, numeric_scale as NUMERIC_SCALE from information_schema.columns
        where table_schema = database() and table_name = 'messages' and column_name = 'cost'`.execute(db);
      expect(rows[0]).toEqual({ DATA_TYPE: 'decimal', NUMERIC_PRECISION: 20, NUMERIC_SCALE: 10 });
      const collations = await sql<{ c: string }>`
        select distinct collation_name as c from information_schema.columns
        where table_schema = database() and collation_name is not null`.execute(db);
      expect(collations.rows.map((row) => row.c)).toEqual(['utf8mb4_bin']);
    } finally {
      await db.destroy();
    }
  });

  it('keeps ids that differ only in case or accents apart, as PostgreSQL does', async () => {
    const store = await openStore(database.url, { migrate: false });
    try {
      const suffix = Math.random().toString(36).slice(2);
      const lower = await store.users.resolveAccount({ channel: 'console', accountId: `ada-${suffix}` });
      const upper = await store.users.resolveAccount({ channel: 'console', accountId: `ADA-${suffix}` });
      const accented = await store.users.resolveAccount({ channel: 'console', accountId: `adá-${suffix}` });
      expect(new Set([lower.user.id, upper.user.id, accented.user.id]).size).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('reports an unreachable server clearly, without the password', async () => {
    const error = await openStore('mysql://palaver:secret@127.0.0.1:1/nowhere', { connectTimeoutMs: 2_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'unreachable', message: expect.stringContaining('127.0.0.1:1') });
    expect((error as Error).message).not.toContain('secret');
  });
});
