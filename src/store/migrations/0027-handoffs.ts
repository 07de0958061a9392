import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * Handing a conversation to a person: `handoffs` keeps each time the agent (or the person's words) asked for one,
 * until an operator takes it or it is closed, with the operators' notices sent for it (`notices`, and when the next
 * is due: null once nobody needs telling). `open_key` is the session's id while the handoff is open and null after,
 * so a unique index keeps one open handoff per conversation on every dialect (MariaDB has no partial indexes).
 * `sessions.assigned_to` names the operator who took the conversation, shown to the others.
 */
export function handoffsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'handoffs')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('reason', long, (col) => col.notNull())
        .addColumn('source', key, (col) => col.notNull())
        .addColumn('requested_at', 'bigint', (col) => col.notNull())
        .addColumn('open_key', key)
        .addColumn('taken_by', key)
        .addColumn('taken_at', 'bigint')
        .addColumn('closed_at', 'bigint')
        .addColumn('closed_by', key)
        .addColumn('notices', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('next_notice_at', 'bigint')
        .execute();
      await db.schema.createIndex('handoffs_open_key_idx').on('handoffs').column('open_key').unique().execute();
      await db.schema.createIndex('handoffs_next_notice_idx').on('handoffs').column('next_notice_at').execute();
      await db.schema.createIndex('handoffs_session_idx').on('handoffs').columns(['session_id', 'requested_at']).execute();
      await db.schema.alterTable('sessions').addColumn('assigned_to', key).execute();
      await db.schema.alterTable('sessions').addColumn('assigned_at', 'bigint').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('sessions').dropColumn('assigned_at').execute();
      await db.schema.alterTable('sessions').dropColumn('assigned_to').execute();
      await db.schema.dropTable('handoffs').execute();
    },
  };
}
