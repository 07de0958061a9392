import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, moneyType, textTypes } from './dialect-schema.js';

/**
 * Costs and budgets:
 * - `cached_input_tokens` on messages and sessions: the input tokens a provider read from its prompt cache (within
 *   `input_tokens`, priced at their own price). A column of the rows a turn already writes: no extra statement.
 * - `daily_spend`: what each user spent per day (in their time zone) and currency, kept only while a per-user daily
 *   budget is configured, so checking the budget is one primary-key read instead of a sum over messages.
 */
export function cachedTokensAndDailySpendMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  const money = moneyType(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('messages')
        .addColumn('cached_input_tokens', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('sessions')
        .addColumn('cached_input_tokens', 'bigint', (col) => col.notNull().defaultTo(0))
        .execute();
      await createTable(db, dialect, 'daily_spend')
        .addColumn('user_id', key, (col) => col.notNull().references('users.id').onDelete('cascade'))
        // The user's calendar day, YYYY-MM-DD.
        .addColumn('day', key, (col) => col.notNull())
        .addColumn('currency', key, (col) => col.notNull())
        .addColumn('cost', money, (col) => col.notNull().defaultTo('0'))
        .addPrimaryKeyConstraint('daily_spend_pk', ['user_id', 'day', 'currency'])
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('daily_spend').execute();
      await db.schema.alterTable('sessions').dropColumn('cached_input_tokens').execute();
      await db.schema.alterTable('messages').dropColumn('cached_input_tokens').execute();
    },
  };
}
