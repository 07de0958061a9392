import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `identity_events`: the audit of who is who — a phone set or taken away, an account relinked to another user, a
 * refused link, an admin's change. No foreign keys: the audit outlives the users it names. `details` is JSON text.
 *
 * `users.phone_source`: where the user's phone came from (`typed`, `channel`, `admin`, `resolver`). A typed number is
 * only a claim; null (phones set before this migration) counts as vouched for.
 */
export function identityAuditMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('users').addColumn('phone_source', 'text').execute();
      await db.schema
        .createTable('identity_events')
        .addColumn('id', 'text', (col) => col.primaryKey())
        .addColumn('user_id', 'text', (col) => col.notNull())
        .addColumn('kind', 'text', (col) => col.notNull())
        .addColumn('channel', 'text')
        .addColumn('account_id', 'text')
        .addColumn('from_user_id', 'text')
        .addColumn('to_user_id', 'text')
        .addColumn('actor', 'text', (col) => col.notNull())
        .addColumn('details', 'text', (col) => col.notNull())
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
