import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { dropIndex } from './dialect-schema.js';

/**
 * Indexes for what operators read (`Store.operators`, the admin API), each small:
 *
 * - users and conversations are listed newest (most recently active) first, paged by (time, id);
 * - costs are summed over replies in a time range: a partial index holds the replies only (one row per turn, so
 *   writes of other messages pay nothing);
 * - a conversation's count of messages waiting for an answer reads its queued inbound messages only.
 */
export function operatorReadIndexesMigration(dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.createIndex('users_created_idx').on('users').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('sessions_updated_idx').on('sessions').columns(['updated_at', 'id']).execute();
      // MariaDB/MySQL have no partial index: the filtered columns lead the key instead.
      const replies = db.schema.createIndex('messages_replies_created_idx').on('messages');
      await (dialect === 'mysql'
        ? replies.columns(['role', 'audience', 'created_at'])
        : replies.column('created_at').where(sql.ref('role'), '=', 'assistant').where(sql.ref('audience'), '=', 'display')
      ).execute();
      const queued = db.schema.createIndex('inbound_messages_session_queued_idx').on('inbound_messages');
      await (dialect === 'mysql' ? queued.columns(['session_id', 'state']) : queued.column('session_id').where(sql.ref('state'), '=', 'queued')).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      const indexes = {
        inbound_messages_session_queued_idx: 'inbound_messages',
        messages_replies_created_idx: 'messages',
        sessions_updated_idx: 'sessions',
        users_created_idx: 'users',
      };
      for (const [index, table] of Object.entries(indexes)) await dropIndex(db, dialect, index, table);
    },
  };
}
