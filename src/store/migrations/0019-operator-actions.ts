import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * Operators stepping in (issue #23).
 *
 * `sessions.paused_at`: an operator paused the agent in this conversation; its messages are still accepted and
 * stored, and no turn answers them until it is resumed (null: not paused). `sessions.ended_at`: when an operator
 * last ended the conversation (its context restarted then).
 *
 * `admin_actions`: the operators' own audit — a message sent as the agent, a pause, a resume, an end, an identity
 * change — with who did it and the request that did it, written in the transaction of the change. A send carries its
 * `Idempotency-Key`, unique, so a repeated request finds the first one's row instead of sending again. No foreign
 * keys: the audit outlives the sessions and users it names. `details` is JSON text.
 */
export function operatorActionsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('sessions').addColumn('paused_at', 'bigint').execute();
      await db.schema.alterTable('sessions').addColumn('ended_at', 'bigint').execute();
      await createTable(db, dialect, 'admin_actions')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('action', key, (col) => col.notNull())
        .addColumn('actor', long, (col) => col.notNull())
        .addColumn('request_id', long)
        .addColumn('idempotency_key', key, (col) => col.unique())
        .addColumn('session_id', key)
        .addColumn('user_id', key)
        .addColumn('details', long, (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        // Actions of one millisecond keep the order they were written in.
        .addColumn('arrival', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('admin_actions_arrival_idx').on('admin_actions').column('arrival').execute();
      await db.schema.createIndex('admin_actions_session_idx').on('admin_actions').columns(['session_id', 'arrival']).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('admin_actions').execute();
      await db.schema.alterTable('sessions').dropColumn('ended_at').execute();
      await db.schema.alterTable('sessions').dropColumn('paused_at').execute();
    },
  };
}
