import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `focus` keyed by (session, user, entity type) instead of (session, entity type): a group conversation is one
 * session with several people in it, and each member's entities in focus (their appointments, with ids the id check
 * accepts) must never reach another member's turn.
 *
 * The table is dropped and created again, and the rows it held are dropped with it: they name no user (a group's
 * row cannot be given to the right member), and focus is a short-lived cache that its loading tool fills again on
 * the next turn that needs it. SQLite cannot change a primary key in place either.
 */
export function focusPerPersonMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('focus').execute();
      await createTable(db, dialect, 'focus')
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('entity_type', key, (col) => col.notNull())
        .addColumn('entities', long, (col) => col.notNull())
        .addColumn('loaded_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('focus_pk', ['session_id', 'user_id', 'entity_type'])
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      // Back to one focus per session: which member's row would win is arbitrary, so none does (a cache, as above).
      await db.schema.dropTable('focus').execute();
      await createTable(db, dialect, 'focus')
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('entity_type', key, (col) => col.notNull())
        .addColumn('entities', long, (col) => col.notNull())
        .addColumn('loaded_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('focus_pk', ['session_id', 'entity_type'])
        .execute();
    },
  };
}
