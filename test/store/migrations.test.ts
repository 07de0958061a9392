import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KyselyStore, migrations, openSqliteDatabase, type Database, type StoreDialect } from '../../src/store/index.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

let dir: string;
const postgres: TestPostgresDatabase[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-migrations-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all(postgres.map((database) => database.drop()));
});

const backends: Record<StoreDialect, () => Promise<Kysely<Database>>> = {
  sqlite: async () => openSqliteDatabase(`sqlite:${join(dir, `upgrade-${Math.random().toString(36).slice(2)}.db`)}`),
  postgres: async () => {
    const database = await createTestPostgresDatabase();
    postgres.push(database);
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url, max: 2 }) }) });
  },
};

describe.each(Object.keys(backends) as StoreDialect[])('migrations on %s', (dialect) => {
  const migratorFor = (db: Kysely<Database>) => new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });

  it('upgrade a database written by the first schema without losing a message, and step back down', async () => {
    const db = await backends[dialect]();
    try {
      const migrator = migratorFor(db);
      expect((await migrator.migrateTo('0001_initial')).error).toBeUndefined();
      const before = new KyselyStore(db, { dialect });
      const { user } = await before.users.resolveAccount({ channel: 'console', accountId: 'ada' });
      const session = await before.sessions.open({ userId: user.id, channel: 'console', conversationId: 'c' });
      const written = await before.messages.append(session.id, [
        { role: 'user', audience: 'display', content: 'first' },
        { role: 'tool', audience: 'audit', content: 'looked up', toolCallId: 'call_1', meta: { isError: false } },
        { role: 'assistant', audience: 'display', content: 'second', inputTokens: 3, outputTokens: 4, cost: '0.25', currency: 'EUR' },
      ]);

      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      const after = new KyselyStore(db, { dialect });
      expect(await after.messages.listRecent(session.id, { limit: 10 })).toEqual(written);
      const [next] = await after.messages.append(session.id, [{ role: 'user', audience: 'display', content: 'third' }]);
      expect(next!.seq).toBe(written.at(-1)!.seq + 1);
      expect((await after.messages.listRecent(session.id, { limit: 2, audience: 'display' })).map((m) => m.content)).toEqual(['second', 'third']);
      expect((await after.sessions.listByUser(user.id)).map((s) => s.id)).toEqual([session.id]);
      // The key is (session, seq) now: a second message with a taken seq is refused.
      const duplicate = sql`insert into messages (id, session_id, seq, role, audience, content, currency, created_at) values ('x', ${session.id}, ${next!.seq}, 'user', 'display', 'dup', 'USD', 0)`;
      await expect(duplicate.execute(db)).rejects.toThrow();

      expect((await migrator.migrateTo('0001_initial')).error).toBeUndefined();
      expect((await new KyselyStore(db, { dialect }).messages.listRecent(session.id, { limit: 10 })).map((m) => m.content)).toEqual(['first', 'looked up', 'second', 'third']);
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
    } finally {
      await db.destroy();
    }
  });
});
