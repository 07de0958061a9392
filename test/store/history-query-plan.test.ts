import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, Kysely, type Compilable, type KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KyselyStore, migrateToLatest, openSqliteDatabase, type Database, type StoreDialect } from '../../src/store/index.js';
import { openMysqlDatabase } from '../../src/store/mysql/open-mysql-database.js';
import { openPostgresDatabase } from '../../src/store/postgres/open-postgres-database.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

// The history a turn sends must cost the same for a conversation of 10 messages as for one of 100,000: listRecent
// has to walk the (session_id, seq) key backwards and stop after LIMIT rows, never scan or sort the session.

let dir: string;
const postgres: TestPostgresDatabase[] = [];
const mariadb: TestMariadbDatabase[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-plan-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all([...postgres, ...mariadb].map((database) => database.drop()));
});

const backends: Record<
  StoreDialect,
  { open(): Promise<Kysely<Database>>; explain: string; analyze: string; planOf(rows: readonly Record<string, unknown>[]): string }
> = {
  sqlite: {
    open: async () => openSqliteDatabase(`sqlite:${join(dir, 'plan.db')}`),
    explain: 'explain query plan ',
    analyze: 'analyze',
    planOf: (rows) => rows.map((row) => String(row.detail)).join('\n'),
  },
  postgres: {
    async open() {
      const database = await createTestPostgresDatabase();
      postgres.push(database);
      return openPostgresDatabase(database.url, { poolSize: 2 });
    },
    explain: 'explain ',
    analyze: 'analyze',
    planOf: (rows) => rows.map((row) => String(row['QUERY PLAN'])).join('\n'),
  },
  mysql: {
    async open() {
      const database = await createTestMariadbDatabase();
      mariadb.push(database);
      return openMysqlDatabase(database.url, { poolSize: 2 });
    },
    explain: 'explain ',
    analyze: 'analyze table messages, sessions',
    planOf: (rows) => rows.map((row) => `${String(row.table)} ${String(row.type)} key=${String(row.key)} ${String(row.Extra)}`).join('\n'),
  },
};

// A plugin makes prepared queries go through Kysely's executeQuery, where the test can see the query they run.
const passThrough: KyselyPlugin = { transformQuery: ({ node }) => node, transformResult: async ({ result }) => result };

describe.each(Object.keys(backends) as StoreDialect[])('recent history query plan on %s', (dialect) => {
  it('walks the session key backwards up to the limit, with no scan of the session and no sort', async () => {
    const backend = backends[dialect];
    const base = await backend.open();
    try {
      await migrateToLatest(base);
      const db = base.withPlugin(passThrough);
      const store = new KyselyStore(db);
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: 'ada' });
      const sessions = [];
      for (const conversationId of ['long', 'other']) {
        const session = await store.sessions.open({ userId: user.id, channel: 'console', conversationId });
        // Every third message an audit record, as tool calls leave them between the display messages.
        await store.messages.append(
          session.id,
          Array.from({ length: 3000 }, (_, i) => ({ role: 'user', audience: i % 3 === 2 ? 'audit' : 'display', content: `m${i}` })),
        );
        sessions.push(session);
      }
      // Statistics as a long-running database has them, so the planner chooses as it would in production.
      await base.executeQuery(CompiledQuery.raw(backend.analyze));

      const execute = vi.spyOn(db, 'executeQuery');
      const variants = [{}, { audience: 'display' as const }, { audience: 'display' as const, sinceContextStart: true }];
      for (const variant of variants) {
        execute.mockClear();
        expect(await store.messages.listRecent(sessions[0]!.id, { limit: 20, ...variant })).toHaveLength(20);
        const query = (execute.mock.calls[0]![0] as Compilable<unknown>).compile();
        const plan = backend.planOf(
          (await base.executeQuery<Record<string, unknown>>(CompiledQuery.raw(backend.explain + query.sql, [...query.parameters]))).rows,
        );
        if (dialect === 'sqlite') {
          expect(plan).toMatch(/SEARCH messages USING (INDEX sqlite_autoindex_messages_1|PRIMARY KEY) \(session_id=\?/);
          expect(plan).not.toMatch(/SCAN messages|TEMP B-TREE/);
        } else if (dialect === 'mysql') {
          // ref or range on the key, and no filesort: read in key order, stopping at the limit.
          expect(plan).toMatch(/^messages (ref|range) key=PRIMARY Using where/m);
          expect(plan).not.toMatch(/messages ALL|filesort|temporary/);
        } else {
          expect(plan).toMatch(/Limit[\s\S]*Index Scan Backward using (messages_pk|messages_session_audience_seq_idx) on messages/);
          expect(plan).not.toMatch(/Seq Scan on messages|Bitmap Heap Scan on messages|Sort/);
        }
      }
    } finally {
      await base.destroy();
    }
  });
});

// PostgreSQL plans by its statistics, which lag behind a conversation that grew since the last ANALYZE (autovacuum
// runs it after a tenth of the table changed). Believing the session short, it used to read all of it in a bitmap
// scan and sort it; the history must walk an index backwards whatever the statistics say.
describe('recent history query plan on postgres before the statistics know the session', () => {
  it('walks an index backwards up to the limit, with no scan of the session and no sort', async () => {
    const base = await backends.postgres.open();
    try {
      await migrateToLatest(base);
      const db = base.withPlugin(passThrough);
      const store = new KyselyStore(db);
      const { user } = await store.users.resolveAccount({ channel: 'console', accountId: 'ada' });
      const session = await store.sessions.open({ userId: user.id, channel: 'console', conversationId: 'long' });
      await store.messages.append(
        session.id,
        Array.from({ length: 30_000 }, (_, i) => ({ role: 'user', audience: i % 3 === 2 ? 'audit' : 'display', content: `m${i}` })),
      );

      const execute = vi.spyOn(db, 'executeQuery');
      for (const variant of [{ audience: 'display' as const }, { audience: 'display' as const, sinceContextStart: true }]) {
        execute.mockClear();
        expect(await store.messages.listRecent(session.id, { limit: 20, ...variant })).toHaveLength(20);
        const query = (execute.mock.calls[0]![0] as Compilable<unknown>).compile();
        const plan = backends.postgres.planOf(
          (await base.executeQuery<Record<string, unknown>>(CompiledQuery.raw(backends.postgres.explain + query.sql, [...query.parameters]))).rows,
        );
        expect(plan).toMatch(/Limit[\s\S]*Index Scan Backward using messages_session_audience_seq_idx on messages/);
        expect(plan).not.toMatch(/Seq Scan on messages|Bitmap Heap Scan on messages|Sort/);
      }
    } finally {
      await base.destroy();
    }
  });
});
