import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * Indexes for what operators read (`Store.operators`, the admin API), each small:
 *
 * - users and conversations are listed newest (most recently active) first, paged by (time, id);
 * - costs are summed over replies in a time range: a partial index holds the replies only (one row per turn, so
 *   writes of other messages pay nothing);
 * - a conversation's count of messages waiting for an answer reads its queued inbound messages only.
 */
export function operatorReadIndexesMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('users_created_idx').on('users').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('sessions_updated_idx').on('sessions').columns(['updated_at', 'id']).execute();
      await db.schema
        .createIndex('messages_replies_created_idx')
        .on('messages')
        .column('created_at')
        .where(sql.ref('role'), '=', 'assistant')
        .where(sql.ref('audience'), '=', 'display')
        .execute();
      await db.schema.createIndex('inbound_messages_session_queued_idx').on('inbound_messages').column('session_id').where(sql.ref('state'), '=', 'queued').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      for (const index of ['inbound_messages_session_queued_idx', 'messages_replies_created_idx', 'sessions_updated_idx', 'users_created_idx']) {
        await db.schema.dropIndex(index).execute();
      }
    },
  };
}
