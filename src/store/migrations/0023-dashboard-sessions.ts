import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `dashboard_sessions`: the operators' dashboard sign-ins, so that signing out holds after a restart and on every
 * process of the database. `id` is a digest of the random part of the session cookie (the cookie itself is never
 * stored); a row goes on sign-out, and ended ones are dropped by the next sign-in.
 */
export function dashboardSessionsMigration(dialect: StoreDialect): Migration {
  const { key } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'dashboard_sessions')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('dashboard_sessions_expires_idx').on('dashboard_sessions').column('expires_at').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('dashboard_sessions').execute();
    },
  };
}
