import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `focus`: the entities a conversation is about (hidden context), one row per session and entity type, so that
 * focus survives a restart. `entities` is a JSON array of {id, description}; `loaded_at` dates it for the TTL.
 */
export function focusMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('focus')
        .addColumn('session_id', 'text', (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('entity_type', 'text', (col) => col.notNull())
        .addColumn('entities', 'text', (col) => col.notNull())
        .addColumn('loaded_at', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('focus_pk', ['session_id', 'entity_type'])
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('focus').execute();
    },
  };
}
