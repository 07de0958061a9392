import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KyselyStore, migrations, openSqliteDatabase, type Database, type StoreDialect } from '../../src/store/index.js';
import { openMysqlDatabase } from '../../src/store/mysql/open-mysql-database.js';
import { openPostgresDatabase } from '../../src/store/postgres/open-postgres-database.js';
import { createTestMariadbDatabase, type TestMariadbDatabase } from '../support/mariadb.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

let dir: string;
const postgres: TestPostgresDatabase[] = [];
const mariadb: TestMariadbDatabase[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'palaver-migrations-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all([...postgres, ...mariadb].map((database) => database.drop()));
});

const backends: Record<StoreDialect, () => Promise<Kysely<Database>>> = {
  sqlite: async () => openSqliteDatabase(`sqlite:${join(dir, `upgrade-${Math.random().toString(36).slice(2)}.db`)}`),
  postgres: async () => {
    const database = await createTestPostgresDatabase();
    postgres.push(database);
    return openPostgresDatabase(database.url, { poolSize: 2 });
  },
  mysql: async () => {
    const database = await createTestMariadbDatabase();
    mariadb.push(database);
    return openMysqlDatabase(database.url, { poolSize: 2 });
  },
};

describe.each(Object.keys(backends) as StoreDialect[])('migrations on %s', (dialect) => {
  const migratorFor = (db: Kysely<Database>) => new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  // MariaDB commits every DDL statement to disk on its own: the 20 migrations took 6 s here (2 busy cores), and these
  // tests run them up, down and up again.
  const timeout = dialect === 'mysql' ? 120_000 : undefined;

  it(
    'upgrade a database written by the first schema without losing a message, and step back down',
    async () => {
      const db = await backends[dialect]();
      try {
        const migrator = migratorFor(db);
        expect((await migrator.migrateTo('0001_initial')).error).toBeUndefined();
        // Rows as Palaver wrote them under the first schema (today's store writes columns that schema lacks).
        const raw = db as unknown as Kysely<any>;
        await raw.insertInto('users').values({ id: 'u1', display_name: 'Ada', phone: null, created_at: 1 }).execute();
        await raw.insertInto('channel_accounts').values({ channel: 'console', account_id: 'ada', user_id: 'u1', created_at: 1 }).execute();
        await raw
          .insertInto('sessions')
          .values({ id: 's1', user_id: 'u1', channel: 'console', conversation_id: 'c', status: 'completed', last_seq: 3, created_at: 1, updated_at: 1 })
          .execute();
        const row = (seq: number, values: Record<string, unknown>) => ({
          id: `m${seq}`,
          session_id: 's1',
          seq,
          tool_calls: null,
          tool_call_id: null,
          model: null,
          input_tokens: 0,
          output_tokens: 0,
          cost: '0',
          currency: 'EUR',
          correlation_id: null,
          meta: null,
          created_at: seq,
          ...values,
        });
        await raw
          .insertInto('messages')
          .values([
            row(1, { role: 'user', audience: 'display', content: 'first' }),
            row(2, { role: 'tool', audience: 'audit', content: 'looked up', tool_call_id: 'call_1', meta: '{"isError":false}' }),
            row(3, { role: 'assistant', audience: 'display', content: 'second', input_tokens: 3, output_tokens: 4, cost: '0.25' }),
          ])
          .execute();

        expect((await migrator.migrateToLatest()).error).toBeUndefined();
        const after = new KyselyStore(db, { dialect });
        const read = await after.messages.listRecent('s1', { limit: 10 });
        expect(read.map((m) => [m.seq, m.role, m.audience, m.content])).toEqual([
          [1, 'user', 'display', 'first'],
          [2, 'tool', 'audit', 'looked up'],
          [3, 'assistant', 'display', 'second'],
        ]);
        expect(read[1]).toMatchObject({ toolCallId: 'call_1', meta: { isError: false } });
        expect(read[2]).toMatchObject({ inputTokens: 3, outputTokens: 4, cost: '0.25', currency: 'EUR' });
        const [next] = await after.messages.append('s1', [{ role: 'user', audience: 'display', content: 'third' }]);
        expect(next!.seq).toBe(4);
        expect((await after.messages.listRecent('s1', { limit: 2, audience: 'display' })).map((m) => m.content)).toEqual(['second', 'third']);
        expect((await after.sessions.listByUser('u1')).map((s) => s.id)).toEqual(['s1']);
        // The key is (session, seq) now: a second message with a taken seq is refused.
        const duplicate = sql`insert into messages (id, session_id, seq, role, audience, content, currency, created_at) values ('x', 's1', ${next!.seq}, 'user', 'display', 'dup', 'USD', 0)`;
        await expect(duplicate.execute(db)).rejects.toThrow();

        expect((await migrator.migrateTo('0001_initial')).error).toBeUndefined();
        const down = await raw.selectFrom('messages').select('content').where('session_id', '=', 's1').orderBy('seq').execute();
        expect(down.map((m) => m.content)).toEqual(['first', 'looked up', 'second', 'third']);
        expect((await migrator.migrateToLatest()).error).toBeUndefined();
      } finally {
        await db.destroy();
      }
    },
    timeout,
  );

  it(
    '0014 binds Telegram bot accounts under the telegram namespace, keeps sessions on the channel, and steps back down',
    async () => {
      const db = await backends[dialect]();
      try {
        const migrator = migratorFor(db);
        expect((await migrator.migrateTo('0013_turn_journal')).error).toBeUndefined();
        const raw = db as unknown as Kysely<any>;
        await raw
          .insertInto('users')
          .values([
            { id: 'u1', display_name: 'Olena', phone: '380671234567', created_at: 1 },
            { id: 'u2', display_name: 'Ivan', phone: null, created_at: 1 },
            { id: 'u3', display_name: 'Ada', phone: null, created_at: 1 },
          ])
          .execute();
        await raw
          .insertInto('channel_accounts')
          .values([
            { channel: 'telegram-bot', account_id: '42', user_id: 'u1', created_at: 1 },
            { channel: 'console', account_id: '42', user_id: 'u3', created_at: 1 },
            // Already bound under `telegram` (a channel of that name): that binding stays.
            { channel: 'telegram', account_id: '7', user_id: 'u2', created_at: 1 },
            { channel: 'telegram-bot', account_id: '7', user_id: 'u3', created_at: 1 },
          ])
          .execute();
        await raw
          .insertInto('sessions')
          .values({ id: 's1', user_id: 'u1', channel: 'telegram-bot', conversation_id: '42', status: 'completed', last_seq: 0, created_at: 1, updated_at: 1 })
          .execute();
        await raw
          .insertInto('inbound_messages')
          .values({
            id: 'i1',
            channel: 'telegram-bot',
            conversation_id: '42',
            account_id: '42',
            user_id: 'u1',
            session_id: 's1',
            text: 'hello',
            message_id: '5',
            dedupe_key: null,
            correlation_id: 'c1',
            language_hint: null,
            display_name: null,
            received_at: 1,
            arrival: 1,
            owner: 'p',
            lease_until: 1,
          })
          .execute();
        await raw
          .insertInto('identity_events')
          .values({
            id: 'e1',
            user_id: 'u1',
            kind: 'phone_set',
            channel: 'telegram-bot',
            account_id: '42',
            from_user_id: null,
            to_user_id: null,
            actor: 'system',
            details: '{}',
            created_at: 1,
            arrival: 1,
          })
          .execute();

        expect((await migrator.migrateToLatest()).error).toBeUndefined();
        const store = new KyselyStore(db, { dialect });
        expect((await store.users.findByAccount('telegram', '42'))?.id).toBe('u1');
        expect(await store.users.findByAccount('telegram-bot', '42')).toBeUndefined();
        expect((await store.users.findByAccount('console', '42'))?.id).toBe('u3');
        expect((await store.users.findByAccount('telegram', '7'))?.id).toBe('u2');
        expect((await store.users.listAccounts('u1')).map((account) => [account.channel, account.accountId])).toEqual([['telegram', '42']]);
        // The conversation stays on its channel; the inbox knows the namespace of who wrote.
        expect((await store.sessions.findByConversation('telegram-bot', '42'))?.id).toBe('s1');
        expect((await store.inbound.listQueued('s1')).map((record) => [record.channel, record.accountNamespace])).toEqual([['telegram-bot', 'telegram']]);
        expect((await store.identityEvents.listByUser('u1')).map((event) => event.channel)).toEqual(['telegram']);

        expect((await migrator.migrateTo('0013_turn_journal')).error).toBeUndefined();
        const accounts = await raw.selectFrom('channel_accounts').select(['channel', 'account_id', 'user_id']).where('user_id', '=', 'u1').execute();
        expect(accounts).toEqual([{ channel: 'telegram-bot', account_id: '42', user_id: 'u1' }]);
        expect((await migrator.migrateToLatest()).error).toBeUndefined();
      } finally {
        await db.destroy();
      }
    },
    timeout,
  );

  it(
    '0011 keys focus by session and person: the session-only rows of before are dropped, as a cache may be',
    async () => {
      const db = await backends[dialect]();
      try {
        const migrator = migratorFor(db);
        expect((await migrator.migrateTo('0009_focus')).error).toBeUndefined();
        const raw = db as unknown as Kysely<any>;
        await raw.insertInto('users').values({ id: 'u1', display_name: 'Ann', phone: null, created_at: 1 }).execute();
        await raw
          .insertInto('sessions')
          .values({ id: 's1', user_id: 'u1', channel: 'group', conversation_id: 'c', status: 'completed', last_seq: 0, created_at: 1, updated_at: 1 })
          .execute();
        await raw
          .insertInto('focus')
          .values({ session_id: 's1', entity_type: 'appointment', entities: '[{"id":42,"description":"Haircut"}]', loaded_at: 1 })
          .execute();

        expect((await migrator.migrateToLatest()).error).toBeUndefined();
        const store = new KyselyStore(db, { dialect });
        const ann = { sessionId: 's1', userId: 'u1' };
        expect(await store.focus.get(ann, 'appointment')).toBeUndefined();
        await store.focus.save(ann, { entityType: 'appointment', entities: [{ id: 7, description: 'Trim' }], loadedAt: 2 });
        expect(await store.focus.get(ann, 'appointment')).toMatchObject({ entities: [{ id: 7 }] });
        expect((await migrator.migrateTo('0009_focus')).error).toBeUndefined();
        expect((await migrator.migrateToLatest()).error).toBeUndefined();
      } finally {
        await db.destroy();
      }
    },
    timeout,
  );
});
