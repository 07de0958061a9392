import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * Per-person rate limits (`limits.perPerson`): `person_rate_hits` keeps one row per message a limit let through (the
 * sliding window counts them), `person_rate_notices` until when the person's last "too many messages" notice holds,
 * and `inbound_messages.rate_limited` marks a message the limit stopped, so whichever process answers it (also after
 * a crash) answers it without the model.
 */
export function personRateLimitsMigration(dialect: StoreDialect): Migration {
  const { key } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'person_rate_hits')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('scope', key, (col) => col.notNull())
        .addColumn('at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('person_rate_hits_window_idx').on('person_rate_hits').columns(['user_id', 'scope', 'at']).execute();
      await createTable(db, dialect, 'person_rate_notices')
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('scope', key, (col) => col.notNull())
        .addColumn('noticed_until', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('person_rate_notices_pk', ['user_id', 'scope'])
        .execute();
      await db.schema.alterTable('inbound_messages').addColumn('rate_limited', key).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('inbound_messages').dropColumn('rate_limited').execute();
      await db.schema.dropTable('person_rate_notices').execute();
      await db.schema.dropTable('person_rate_hits').execute();
    },
  };
}
