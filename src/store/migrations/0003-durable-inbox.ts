import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * The durable inbox: accepted messages wait here, leased to the process that answers them, until their turn stores
 * them into `messages` together with the reply (so a conversation is stored in the order the model saw it). A
 * message whose lease ran out (its process is gone) is answered by another. Redelivery keys are unique per channel
 * and conversation, no longer per channel: `inbound_keys` goes (a key seen before the upgrade may be accepted once
 * more).
 */
export function durableInboxMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'inbound_messages')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull().references('users.id'))
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id'))
        .addColumn('text', long, (col) => col.notNull())
        .addColumn('message_id', key)
        .addColumn('dedupe_key', key)
        .addColumn('correlation_id', long, (col) => col.notNull())
        .addColumn('language_hint', long)
        .addColumn('display_name', long)
        .addColumn('conversation_kind', key, (col) => col.notNull().defaultTo('direct'))
        .addColumn('received_at', 'bigint', (col) => col.notNull())
        // Order of arrival: epoch microseconds made strictly increasing by the writing process, so two messages of
        // one millisecond keep their order (received_at alone would tie).
        .addColumn('arrival', 'bigint', (col) => col.notNull())
        .addColumn('state', key, (col) => col.notNull().defaultTo('queued'))
        .addColumn('owner', key)
        .addColumn('lease_until', 'bigint', (col) => col.notNull())
        .addColumn('reply_message_id', key)
        .addColumn('reply_seq', 'bigint')
        .addColumn('answered_at', 'bigint')
        .execute();
      // Redelivery: one message per (channel, conversation, key); messages without a key are never duplicates (both
      // back ends treat NULLs in a unique index as distinct).
      await db.schema
        .createIndex('inbound_messages_dedupe_idx')
        .on('inbound_messages')
        .columns(['channel', 'conversation_id', 'dedupe_key'])
        .unique()
        .execute();
      // Recovery and lease renewal read only what is still queued (MariaDB/MySQL have no partial index: the state
      // leads the key instead).
      const queued = db.schema.createIndex('inbound_messages_queued_idx').on('inbound_messages');
      await (dialect === 'mysql' ? queued.columns(['state', 'lease_until']) : queued.columns(['lease_until']).where(sql.ref('state'), '=', 'queued')).execute();
      await db.schema.createIndex('inbound_messages_session_idx').on('inbound_messages').columns(['session_id', 'arrival']).execute();
      await db.schema.dropTable('inbound_keys').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'inbound_keys')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('key', key, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('inbound_keys_pk', ['channel', 'key'])
        .execute();
      await db.schema.dropTable('inbound_messages').execute();
    },
  };
}
