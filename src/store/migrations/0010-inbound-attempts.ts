import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';

/**
 * `inbound_messages.attempts` and `not_before`: how many turns took a message, and when it may be taken again, kept
 * in the store so that a message whose turns keep failing is given up on after `inbox.maxTurnAttempts`, across
 * restarts, instead of being retried (and the model paid) forever. A row is accepted with 1 (the accepting process's
 * turn is the first attempt); rows queued before this migration count as taken once.
 *
 * `state` gains `abandoned`: a message given up on whose apology could not be stored either.
 */
export function inboundAttemptsMigration(_dialect: StoreDialect): Migration {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .alterTable('inbound_messages')
        .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(1))
        .execute();
      await db.schema.alterTable('inbound_messages').addColumn('not_before', 'bigint').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('inbound_messages').dropColumn('not_before').execute();
      await db.schema.alterTable('inbound_messages').dropColumn('attempts').execute();
    },
  };
}
