import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `profiles`: one row per user with their settings (language, zone, country) as versioned JSON text. The row is
 * read through the settings schema, never trusted as it is, so the column stays plain text on both back ends.
 */
export function profilesMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'profiles')
        .addColumn('user_id', key, (col) => col.primaryKey().references('users.id').onDelete('cascade'))
        .addColumn('settings', long, (col) => col.notNull())
        .addColumn('updated_at', 'bigint', (col) => col.notNull())
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('profiles').execute();
    },
  };
}
