import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * - `deliveries`, the outbox of channels that deliver to people who are not connected (messengers): each part of a
 *   reply is stored, pending, in the turn's closing transaction; it is marked sent with the channel's message id as
 *   soon as the channel took it; parts a crash left pending are sent by whoever takes over their lease.
 * - `channel_state`: small values a channel keeps across restarts (a polling offset, business connections).
 * - `sessions.context_since_seq`: a reset starts the conversation afresh for the model without deleting anything.
 */
export function outboxAndChannelStateMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'deliveries')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id'))
        .addColumn('reply_message_id', key, (col) => col.notNull())
        .addColumn('part', 'integer', (col) => col.notNull())
        .addColumn('text', long, (col) => col.notNull())
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('in_reply_to', long, (col) => col.notNull())
        .addColumn('correlation_id', long, (col) => col.notNull())
        .addColumn('state', key, (col) => col.notNull().defaultTo('pending'))
        .addColumn('channel_message_id', long)
        .addColumn('error', long)
        .addColumn('owner', key)
        .addColumn('lease_until', 'bigint', (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('sent_at', 'bigint')
        .addUniqueConstraint('deliveries_reply_part_unique', ['reply_message_id', 'part'])
        .execute();
      await db.schema.createIndex('deliveries_pending_idx').on('deliveries').columns(['state', 'lease_until']).execute();
      await createTable(db, dialect, 'channel_state')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('key', key, (col) => col.notNull())
        .addColumn('value', long, (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('channel_state_pk', ['channel', 'key'])
        .execute();
      await db.schema
        .alterTable('sessions')
        .addColumn('context_since_seq', 'bigint', (col) => col.notNull().defaultTo(0))
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('sessions').dropColumn('context_since_seq').execute();
      await db.schema.dropTable('channel_state').execute();
      await db.schema.dropTable('deliveries').execute();
    },
  };
}
