import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * `channel_leases`: which process holds a channel that must run in one process only (a Telegram user account's
 * MTProto session: two clients on one session get AUTH_KEY_DUPLICATED and may lose it). The holder renews
 * `expires_at` while it runs; a crashed holder's lease runs out and the next process takes it over.
 */
export function channelLeasesMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'channel_leases')
        .addColumn('channel', key, (col) => col.primaryKey())
        .addColumn('holder', key, (col) => col.notNull())
        .addColumn('acquired_at', 'bigint', (col) => col.notNull())
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('channel_leases').execute();
    },
  };
}
