import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, moneyType, textTypes } from './dialect-schema.js';

/**
 * `budget_reservations` keyed by turn AND process. A turn taken over by another process while the first one still
 * runs it (its lease lapsed, it was paused) has two claims for a while: the first process may still be paying for a
 * model call it made before it learns it lost the conversation, and that claim must keep counting until it records
 * what it spent. Reservations only live while their turns run, so the table is recreated empty (a turn running
 * during the upgrade reserves again before its next model call).
 */
export function budgetReservationsPerProcessMigration(dialect: StoreDialect): Migration {
  const { key } = textTypes(dialect);
  const money = moneyType(dialect);
  const create = async (db: Kysely<any>, perProcess: boolean) => {
    await createTable(db, dialect, 'budget_reservations')
      .addColumn('turn_id', key, (col) => col.notNull())
      .addColumn('owner', key, (col) => col.notNull())
      .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
      .addColumn('day', key, (col) => col.notNull())
      .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
      .addColumn('amount', money, (col) => col.notNull())
      .addColumn('currency', key, (col) => col.notNull())
      .addColumn('created_at', 'bigint', (col) => col.notNull())
      .addPrimaryKeyConstraint('budget_reservations_pk', perProcess ? ['turn_id', 'owner'] : ['turn_id'])
      .execute();
    await db.schema.createIndex('budget_reservations_user_day_idx').on('budget_reservations').columns(['user_id', 'day']).execute();
    await db.schema.createIndex('budget_reservations_session_idx').on('budget_reservations').column('session_id').execute();
  };
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('budget_reservations').execute();
      await create(db, true);
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('budget_reservations').execute();
      await create(db, false);
    },
  };
}
