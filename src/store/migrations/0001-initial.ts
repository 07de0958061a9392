import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, moneyType, textTypes } from './dialect-schema.js';

/**
 * The first schema. One definition for every back end; the column types that differ (money, and text that MariaDB
 * must index) come from `dialect-schema.ts`.
 */
export function initialMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  const money = moneyType(dialect);

  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'users')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('display_name', long)
        .addColumn('phone', key)
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addUniqueConstraint('users_phone_unique', ['phone'])
        .execute();

      await createTable(db, dialect, 'channel_accounts')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('channel_accounts_pk', ['channel', 'account_id'])
        .execute();
      await db.schema.createIndex('channel_accounts_user_idx').on('channel_accounts').column('user_id').execute();

      await createTable(db, dialect, 'sessions')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('status', key, (col) => col.notNull().defaultTo('pending'))
        .addColumn('title', long)
        .addColumn('input_tokens', 'bigint', (col) => col.notNull().defaultTo(0))
        .addColumn('output_tokens', 'bigint', (col) => col.notNull().defaultTo(0))
        .addColumn('cost', money, (col) => col.notNull().defaultTo('0'))
        .addColumn('currency', key, (col) => col.notNull().defaultTo('USD'))
        .addColumn('last_seq', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addUniqueConstraint('sessions_conversation_unique', ['channel', 'conversation_id'])
        .addCheckConstraint('sessions_status_check', sql`status in ('pending', 'running', 'completed', 'failed')`)
        .execute();
      await db.schema.createIndex('sessions_user_updated_idx').on('sessions').columns(['user_id', 'updated_at']).execute();

      await createTable(db, dialect, 'messages')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (col) => col.notNull())
        .addColumn('role', key, (col) => col.notNull())
        .addColumn('audience', key, (col) => col.notNull())
        .addColumn('content', long, (col) => col.notNull())
        .addColumn('tool_calls', long)
        .addColumn('tool_call_id', long)
        .addColumn('model', long)
        .addColumn('input_tokens', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('output_tokens', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('cost', money, (col) => col.notNull().defaultTo('0'))
        .addColumn('currency', key, (col) => col.notNull())
        .addColumn('correlation_id', long)
        .addColumn('meta', long)
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        // Also the index behind "recent messages of a session" (scanned backwards from the highest seq).
        .addUniqueConstraint('messages_session_seq_unique', ['session_id', 'seq'])
        .addCheckConstraint('messages_audience_check', sql`audience in ('display', 'audit')`)
        .execute();
      // Recent messages of one audience (the conversation the person sees) without scanning audit rows.
      await db.schema.createIndex('messages_session_audience_seq_idx').on('messages').columns(['session_id', 'audience', 'seq']).execute();

      await createTable(db, dialect, 'user_state')
        .addColumn('user_id', key, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('version', 'integer', (col) => col.notNull())
        .addColumn('data', long, (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .execute();

      await createTable(db, dialect, 'tool_calls')
        .addColumn('call_id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('correlation_id', long, (col) => col.notNull())
        .addColumn('name', long, (col) => col.notNull())
        .addColumn('arguments', long, (col) => col.notNull())
        .addColumn('status', key, (col) => col.notNull())
        .addColumn('result', long)
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('finished_at', 'bigint')
        .addCheckConstraint('tool_calls_status_check', sql`status in ('running', 'succeeded', 'failed')`)
        .execute();
      await db.schema.createIndex('tool_calls_session_idx').on('tool_calls').columns(['session_id', 'created_at']).execute();

      await createTable(db, dialect, 'inbound_keys')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('key', key, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('inbound_keys_pk', ['channel', 'key'])
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      for (const table of ['inbound_keys', 'tool_calls', 'user_state', 'messages', 'sessions', 'channel_accounts', 'users']) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  };
}
