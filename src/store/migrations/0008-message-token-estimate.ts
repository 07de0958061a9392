import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `messages.token_estimate`: the message's estimated input tokens (`estimateTokens`), computed once at insert so
 * that bounding the history by tokens reads a number instead of measuring texts on every turn.
 *
 * No backfill: the estimate is computed in TypeScript (SQL cannot count CJK characters the same way on both
 * dialects) and rewriting every stored row would make upgrading a large database slow. A row stored before this
 * migration keeps 0 — an estimate is never 0, it includes the per-message overhead — and gets its estimate computed
 * when it is read.
 */
export function messageTokenEstimateMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('messages')
        .addColumn('token_estimate', 'integer', (col) => col.notNull().defaultTo(0))
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('messages').dropColumn('token_estimate').execute();
    },
  };
}
