import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, dropIndex, textTypes } from './dialect-schema.js';

/**
 * Tool calls a person approves first: `tool_approvals` keeps each request (the turn and call it holds, what the
 * person was shown, who may decide) until one decision (approved, declined, expired) is taken by a guarded UPDATE; `model_calls` counts the turn's model
 * calls billed when it stopped to ask, so the resumed turn bills only what it adds.
 * `sessions.approval_pending_at` holds a conversation's messages while its turn waits, as a pause does.
 * `deliveries.approval` carries the request's id with the question's outbox part, so a part sent after a restart
 * still has its buttons.
 */
export function toolApprovalsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'tool_approvals')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('turn_id', key, (col) => col.notNull())
        .addColumn('call_id', key, (col) => col.notNull())
        .addColumn('session_id', key, (col) => col.notNull())
        .addColumn('user_id', key, (col) => col.notNull())
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('account_namespace', key, (col) => col.notNull())
        .addColumn('conversation_kind', key, (col) => col.notNull())
        .addColumn('tool', key, (col) => col.notNull())
        .addColumn('arguments', long, (col) => col.notNull())
        .addColumn('summary', long, (col) => col.notNull())
        .addColumn('decided_by_kind', key, (col) => col.notNull())
        .addColumn('language', key, (col) => col.notNull())
        .addColumn('status', key, (col) => col.notNull())
        .addColumn('requested_at', 'bigint', (col) => col.notNull())
        .addColumn('expires_at', 'bigint', (col) => col.notNull())
        .addColumn('asked_again', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('model_calls', 'integer', (col) => col.notNull().defaultTo(0))
        .addColumn('decided_at', 'bigint')
        .addColumn('decided_by', key)
        .addColumn('reason', long)
        .execute();
      await db.schema.createIndex('tool_approvals_call_idx').on('tool_approvals').columns(['turn_id', 'call_id']).unique().execute();
      await db.schema.createIndex('tool_approvals_status_idx').on('tool_approvals').columns(['status', 'expires_at']).execute();
      await db.schema.createIndex('tool_approvals_session_idx').on('tool_approvals').columns(['session_id', 'status']).execute();
      await db.schema.alterTable('sessions').addColumn('approval_pending_at', 'bigint').execute();
      await db.schema.alterTable('deliveries').addColumn('approval', long).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('deliveries').dropColumn('approval').execute();
      await db.schema.alterTable('sessions').dropColumn('approval_pending_at').execute();
      await dropIndex(db, dialect, 'tool_approvals_session_idx', 'tool_approvals');
      await dropIndex(db, dialect, 'tool_approvals_status_idx', 'tool_approvals');
      await dropIndex(db, dialect, 'tool_approvals_call_idx', 'tool_approvals');
      await db.schema.dropTable('tool_approvals').execute();
    },
  };
}
