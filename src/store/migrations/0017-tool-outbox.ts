import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * The tool outbox (`tools.dispatch: "streams"`): one row per tool call waiting for a worker's result, written in the
 * transaction that records the call, so a call is either recorded and due for publication or not made at all. The
 * relay publishes a row to the Redis stream and stamps `published_at`; the row goes when the result comes back (or
 * the runtime gives up on the call). Rows of a response channel are published again when Redis lost its data.
 */
export function toolOutboxMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'tool_outbox')
        // The call's idempotency key (`<turn>:<toolCallId>`), the key of its `tool_calls` record.
        .addColumn('call_key', key, (col) => col.primaryKey())
        .addColumn('response_channel', key, (col) => col.notNull())
        // JSON of the wire's ToolCallRequested, for the current attempt.
        .addColumn('payload', long, (col) => col.notNull())
        .addColumn('attempt', 'integer', (col) => col.notNull())
        .addColumn('deadline', 'bigint', (col) => col.notNull())
        .addColumn('published_at', 'bigint')
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('tool_outbox_channel_idx').on('tool_outbox').columns(['response_channel', 'created_at']).execute();
      await db.schema.createIndex('tool_outbox_deadline_idx').on('tool_outbox').column('deadline').execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('tool_outbox').execute();
    },
  };
}
