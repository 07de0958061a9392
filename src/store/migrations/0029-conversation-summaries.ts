import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, moneyType, textTypes } from './dialect-schema.js';

/**
 * Summaries of the older part of long conversations (`agent.memory.summarize`):
 * - `conversation_summaries` keeps every version written, per session (unique `(session_id, version)`): the context
 *   start it was written in (`from_seq`, the session's `context_since_seq` then) and the last display message it
 *   covers (`to_seq`), its text, and the model call's tokens and cost. Rows are only ever inserted, in the transaction
 *   that ends the writer's claim, so a reader sees whole versions or none.
 * - `summary_claims` is one row per session that was ever summarised: which writer (`claim_id`, `owner`) may write its
 *   next version and until when (`expires_at`, epoch ms). A claim is taken by one guarded statement (free or run
 *   out), so one process summarises a conversation at a time; a crashed writer's claim runs out.
 */
export function conversationSummariesMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  const money = moneyType(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'conversation_summaries')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('version', 'integer', (col) => col.notNull())
        .addColumn('from_seq', 'bigint', (col) => col.notNull())
        .addColumn('to_seq', 'bigint', (col) => col.notNull())
        .addColumn('text', long, (col) => col.notNull())
        .addColumn('model', key, (col) => col.notNull())
        .addColumn('input_tokens', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('output_tokens', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('cost', money, (col) => col.notNull())
        .addColumn('currency', key, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('conversation_summaries_version_idx').on('conversation_summaries').columns(['session_id', 'version']).unique().execute();
      await createTable(db, dialect, 'summary_claims')
        .addColumn('session_id', key, (col) => col.primaryKey())
        .addColumn('claim_id', key)
        .addColumn('owner', key)
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('summary_claims_claim_idx').on('summary_claims').column('claim_id').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('summary_claims').execute();
      await db.schema.dropTable('conversation_summaries').execute();
    },
  };
}
