import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, dropIndex, textTypes } from './dialect-schema.js';

/**
 * Messages stored without a turn (`ChannelContext.record`: imported history, the account owner's own words): each
 * channel message id once per conversation. `recorded_messages` keys them by (channel, conversation, channel message
 * id), with the stored message, the session, and who the conversation's person was (account namespace, account id,
 * user), so a relink carries along conversations that hold only recorded messages too.
 *
 * `inbound_messages_message_idx`: recording skips a message that already came through `accept` with that id.
 */
export function recordedMessagesMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'recorded_messages')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('message_id', key, (col) => col.notNull())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('stored_message_id', key, (col) => col.notNull())
        .addColumn('account_namespace', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('recorded_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('recorded_messages_pk', ['channel', 'conversation_id', 'message_id'])
        .execute();
      await db.schema.createIndex('recorded_messages_session_idx').on('recorded_messages').columns(['session_id', 'account_id']).execute();
      await db.schema.createIndex('inbound_messages_message_idx').on('inbound_messages').columns(['channel', 'conversation_id', 'message_id']).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await dropIndex(db, dialect, 'inbound_messages_message_idx', 'inbound_messages');
      await db.schema.dropTable('recorded_messages').execute();
    },
  };
}
