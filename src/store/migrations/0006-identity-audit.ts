import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `identity_events`: the audit of who is who — a phone set or taken away, an account relinked to another user, a
 * refused link, an admin's change. No foreign keys: the audit outlives the users it names. `details` is JSON text.
 *
 * `users.phone_source`: where the user's phone came from (`typed`, `channel`, `admin`, `resolver`). A typed number is
 * only a claim; null (phones set before this migration) counts as vouched for.
 */
export function identityAuditMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('users').addColumn('phone_source', long).execute();
      await createTable(db, dialect, 'identity_events')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('kind', key, (col) => col.notNull())
        .addColumn('channel', key)
        .addColumn('account_id', key)
        .addColumn('from_user_id', key)
        .addColumn('to_user_id', key)
        .addColumn('actor', long, (col) => col.notNull())
        .addColumn('details', long, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        // Events of one transaction share a millisecond: this keeps them in the order they happened.
        .addColumn('arrival', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('identity_events_user_idx').on('identity_events').columns(['user_id', 'arrival']).execute();
      await db.schema.createIndex('identity_events_from_user_idx').on('identity_events').column('from_user_id').execute();
      await db.schema.createIndex('identity_events_to_user_idx').on('identity_events').column('to_user_id').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('identity_events').execute();
      await db.schema.alterTable('users').dropColumn('phone_source').execute();
    },
  };
}
