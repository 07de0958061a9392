import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { dropIndex } from './dialect-schema.js';

/**
 * Fewer index pages written per turn: every index a message or session write touches is another page in the commit.
 *
 * - `messages` is keyed by (session_id, seq), which is how it is always read; the random `id` no longer has an
 *   index of its own (nothing looks a message up by id).
 * - The (session_id, audience, seq) index goes too: the recent display messages of a session are found by walking
 *   its key backwards past the few audit records between them (one per tool call).
 * - Sessions are indexed by user only: the index on (user_id, updated_at) moved on every write to a session, which
 *   is twice per turn. A user's sessions are few, so listing them by recency sorts in memory.
 *
 * SQLite cannot change a table's primary key in place, so there `messages` is rebuilt (rows copied as they are).
 * MariaDB/MySQL change it in place, as PostgreSQL does.
 */
export function lighterTurnWritesMigration(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (dialect === 'postgres') {
        await sql`alter table messages drop constraint messages_pkey, drop constraint messages_session_seq_unique, add constraint messages_pk primary key (session_id, seq)`.execute(
          db,
        );
        await db.schema.dropIndex('messages_session_audience_seq_idx').execute();
      } else if (dialect === 'mysql') {
        await sql`alter table messages drop primary key, drop index messages_session_seq_unique, add primary key (session_id, seq)`.execute(db);
        await dropIndex(db, dialect, 'messages_session_audience_seq_idx', 'messages');
      } else {
        await rebuildSqliteMessages(db, 'up');
      }
      if (dialect === 'mysql') {
        // The old index is the one InnoDB uses for the foreign key on user_id: its successor must exist first.
        await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
        await dropIndex(db, dialect, 'sessions_user_updated_idx', 'sessions');
        return;
      }
      await db.schema.dropIndex('sessions_user_updated_idx').execute();
      await db.schema.createIndex('sessions_user_idx').on('sessions').column('user_id').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      if (dialect === 'postgres') {
        await sql`alter table messages drop constraint messages_pk, add constraint messages_pkey primary key (id), add constraint messages_session_seq_unique unique (session_id, seq)`.execute(
          db,
        );
        await db.schema.createIndex('messages_session_audience_seq_idx').on('messages').columns(['session_id', 'audience', 'seq']).execute();
      } else if (dialect === 'mysql') {
        await sql`alter table messages drop primary key, add primary key (id), add constraint messages_session_seq_unique unique (session_id, seq)`.execute(db);
        await db.schema.createIndex('messages_session_audience_seq_idx').on('messages').columns(['session_id', 'audience', 'seq']).execute();
        await db.schema.createIndex('sessions_user_updated_idx').on('sessions').columns(['user_id', 'updated_at']).execute();
        await dropIndex(db, dialect, 'sessions_user_idx', 'sessions');
        return;
      } else {
        await rebuildSqliteMessages(db, 'down');
      }
      await db.schema.dropIndex('sessions_user_idx').execute();
      await db.schema.createIndex('sessions_user_updated_idx').on('sessions').columns(['user_id', 'updated_at']).execute();
    },
  };
}

/** Creates the messages table in its new (`up`) or old (`down`) shape under a new name, copies, swaps. */
async function rebuildSqliteMessages(db: Kysely<any>, direction: 'up' | 'down'): Promise<void> {
  const keyed = direction === 'up';
  await db.schema
    .createTable('messages_rebuilt')
    .addColumn('id', 'text', (col) => (keyed ? col.notNull() : col.primaryKey()))
    .addColumn('session_id', 'text', (col) => col.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('role', 'text', (col) => col.notNull())
    .addColumn('audience', 'text', (col) => col.notNull())
    .addColumn('content', 'text', (col) => col.notNull())
    .addColumn('tool_calls', 'text')
    .addColumn('tool_call_id', 'text')
    .addColumn('model', 'text')
    .addColumn('input_tokens', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('output_tokens', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('cost', 'text', (col) => col.notNull().defaultTo('0'))
    .addColumn('currency', 'text', (col) => col.notNull())
    .addColumn('correlation_id', 'text')
    .addColumn('meta', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .$call((table) =>
      keyed
        ? table.addPrimaryKeyConstraint('messages_pk', ['session_id', 'seq'])
        : table.addUniqueConstraint('messages_session_seq_unique', ['session_id', 'seq']),
    )
    .addCheckConstraint('messages_audience_check', sql`audience in ('display', 'audit')`)
    .execute();
  await sql`insert into messages_rebuilt select id, session_id, seq, role, audience, content, tool_calls, tool_call_id, model, input_tokens, output_tokens, cost, currency, correlation_id, meta, created_at from messages`.execute(
    db,
  );
  await db.schema.dropTable('messages').execute();
  await db.schema.alterTable('messages_rebuilt').renameTo('messages').execute();
  if (!keyed) await db.schema.createIndex('messages_session_audience_seq_idx').on('messages').columns(['session_id', 'audience', 'seq']).execute();
}
