import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `focus`: the entities a conversation is about (hidden context), one row per session and entity type, so that
 * focus survives a restart. `entities` is a JSON array of {id, description}; `loaded_at` dates it for the TTL.
 */
export function focusMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'focus')
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('entity_type', key, (col) => col.notNull())
        .addColumn('entities', long, (col) => col.notNull())
        .addColumn('loaded_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('focus_pk', ['session_id', 'entity_type'])
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('focus').execute();
    },
  };
}
