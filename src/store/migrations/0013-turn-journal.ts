import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, dropIndex, textTypes } from './dialect-schema.js';

/**
 * The turn journal: a turn's progress, written as it happens so that a turn a crash cut off resumes instead of
 * starting again. `turns` holds an open turn (its reply not stored yet) and the process working on it;
 * `turn_messages` the inbound messages it answers, in the order the model saw them (one open turn per message); `turn_model_calls` each model call's
 * response by its place in the turn; `tool_calls` (unused until now) gains the turn its calls belong to. All of a
 * turn's rows go in the transaction that stores its reply.
 */
export function turnJournalMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'turns')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('owner', key, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .execute();
      await createTable(db, dialect, 'turn_messages')
        .addColumn('inbound_id', key, (col) => col.primaryKey().references('inbound_messages.id').onDelete('cascade'))
        .addColumn('turn_id', key, (col) => col.notNull().references('turns.id').onDelete('cascade'))
        .addColumn('position', 'integer', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('turn_messages_turn_idx').on('turn_messages').column('turn_id').execute();
      await createTable(db, dialect, 'turn_model_calls')
        .addColumn('turn_id', key, (col) => col.notNull().references('turns.id').onDelete('cascade'))
        .addColumn('seq', 'integer', (col) => col.notNull())
        .addColumn('call', long, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('turn_model_calls_pk', ['turn_id', 'seq'])
        .execute();
      await db.schema.alterTable('tool_calls').addColumn('turn_id', key).execute();
      await db.schema.createIndex('tool_calls_turn_idx').on('tool_calls').column('turn_id').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await dropIndex(db, dialect, 'tool_calls_turn_idx', 'tool_calls');
      await db.schema.alterTable('tool_calls').dropColumn('turn_id').execute();
      await db.schema.dropTable('turn_model_calls').execute();
      await db.schema.dropTable('turn_messages').execute();
      await db.schema.dropTable('turns').execute();
    },
  };
}
