import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { textTypes } from './dialect-schema.js';

/**
 * Replies as actions: an outbox record may be a reaction (an emoji on one of the person's messages) as well as a
 * message, and a message may quote one (`reply_to`). A plan's sends and reactions are one conversation's records in
 * plan order, so recovery after a crash carries out the rest of the plan in order, each once.
 */
export function replyActionsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      // Null on every existing record: they are plain messages.
      await db.schema.alterTable('deliveries').addColumn('reply_to', long).execute();
      await db.schema.alterTable('deliveries').addColumn('reaction_emoji', long).execute();
      await db.schema.alterTable('deliveries').addColumn('reaction_message_id', long).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('deliveries').dropColumn('reaction_message_id').execute();
      await db.schema.alterTable('deliveries').dropColumn('reaction_emoji').execute();
      await db.schema.alterTable('deliveries').dropColumn('reply_to').execute();
    },
  };
}
