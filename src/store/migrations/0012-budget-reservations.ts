import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `budget_reservations`: what running turns have claimed of their user's daily budget (and their session's), taken
 * before a turn's first model call and settled in its closing transaction. One row per turn, keyed by the turn's first
 * accepted message: a reservation counts only while that message is still queued under the lease of the process that
 * reserved (`owner`), so a crashed turn's claim stops counting when its lease runs out.
 */
export function budgetReservationsMigration(dialect: StoreDialect): Migration {
  const money = dialect === 'postgres' ? sql`numeric(20, 10)` : sql`text`;
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('budget_reservations')
        .addColumn('turn_id', 'text', (col) => col.primaryKey())
        .addColumn('owner', 'text', (col) => col.notNull())
        .addColumn('user_id', 'text', (col) => col.notNull().references('users.id').onDelete('cascade'))
        // The user's calendar day, YYYY-MM-DD.
        .addColumn('day', 'text', (col) => col.notNull())
        .addColumn('session_id', 'text', (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('amount', money, (col) => col.notNull())
        .addColumn('currency', 'text', (col) => col.notNull())
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
