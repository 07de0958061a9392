import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * The durable inbox: accepted messages wait here, leased to the process that answers them, until their turn stores
 * them into `messages` together with the reply (so a conversation is stored in the order the model saw it). A
 * message whose lease ran out (its process is gone) is answered by another. Redelivery keys are unique per channel
 * and conversation, no longer per channel: `inbound_keys` goes (a key seen before the upgrade may be accepted once
 * more).
 */
export function durableInboxMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('inbound_messages')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('channel', 'text', (col) => col.notNull())
        .addColumn('conversation_id', 'text', (col) => col.notNull())
        .addColumn('account_id', 'text', (col) => col.notNull())
        .addColumn('user_id', 'text', (col) => col.notNull().references('users.id'))
        .addColumn('session_id', 'text', (col) => col.notNull().references('sessions.id'))
        .addColumn('text', 'text', (col) => col.notNull())
        .addColumn('message_id', 'text')
        .addColumn('dedupe_key', 'text')
        .addColumn('correlation_id', 'text', (col) => col.notNull())
        .addColumn('language_hint', 'text')
        .addColumn('display_name', 'text')
        .addColumn('conversation_kind', 'text', (col) => col.notNull().defaultTo('direct'))
        .addColumn('received_at', 'bigint', (col) => col.notNull())
        // Order of arrival: epoch microseconds made strictly increasing by the writing process, so two messages of
        // one millisecond keep their order (received_at alone would tie).
        .addColumn('arrival', 'bigint', (col) => col.notNull())
        .addColumn('state', 'text', (col) => col.notNull().defaultTo('queued'))
        .addColumn('owner', 'text')
        .addColumn('lease_until', 'bigint', (col) => col.notNull())
        .addColumn('reply_message_id', 'text')
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
      // Recovery and lease renewal read only what is still queued.
      await db.schema
        .createIndex('inbound_messages_queued_idx')
        .on('inbound_messages')
        .columns(['lease_until'])
        .where(sql.ref('state'), '=', 'queued')
        .execute();
      await db.schema.createIndex('inbound_messages_session_idx').on('inbound_messages').columns(['session_id', 'arrival']).execute();
      await db.schema.dropTable('inbound_keys').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('inbound_keys')
        .addColumn('channel', 'text', (col) => col.notNull())
        .addColumn('key', 'text', (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('inbound_keys_pk', ['channel', 'key'])
        .execute();
      await db.schema.dropTable('inbound_messages').execute();
    },
  };
}
