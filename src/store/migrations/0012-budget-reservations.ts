import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, moneyType, textTypes } from './dialect-schema.js';

/**
 * `budget_reservations`: what running turns have claimed of their user's daily budget (and their session's), taken
 * before a turn's first model call and settled in its closing transaction. One row per turn, keyed by the turn's first
 * accepted message: a reservation counts only while that message is still queued under the lease of the process that
 * reserved (`owner`), so a crashed turn's claim stops counting when its lease runs out.
 */
export function budgetReservationsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  const money = moneyType(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'budget_reservations')
        .addColumn('turn_id', key, (col) => col.primaryKey())
        .addColumn('owner', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        // The user's calendar day, YYYY-MM-DD.
        .addColumn('day', key, (col) => col.notNull())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('amount', money, (col) => col.notNull())
        .addColumn('currency', key, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('budget_reservations_user_day_idx').on('budget_reservations').columns(['user_id', 'day']).execute();
      await db.schema.createIndex('budget_reservations_session_idx').on('budget_reservations').column('session_id').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('budget_reservations').execute();
    },
  };
}
