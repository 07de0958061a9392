import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `conversation_claims.claimed_at`: when the owner's turn began (set with the claim, kept by renewals, 0 once
 * released). A message its process held when it died counts a turn attempt on takeover when it was already there as
 * that turn began, also when the turn had journaled nothing yet (its first model call): so a message that crashes its
 * process every time is answered with the apology after `inbox.maxTurnAttempts`, instead of being retried forever.
 * It is set in the claim's own statement: no write more per turn.
 */
export function claimStartMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('conversation_claims').addColumn('claimed_at', 'bigint', (col) => col.notNull().defaultTo(0)).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('conversation_claims').dropColumn('claimed_at').execute();
    },
  };
}
