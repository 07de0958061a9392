import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/**
 * Several processes on one database. `conversation_claims`: which process runs a conversation's turn now, with a
 * token that grows with every new owner and is checked by each write of the turn (a process that lost its claim
 * while paused can write nothing). `processes`: who is running, where, and since when, so that a restarted process
 * can take over its dead predecessor's work at once instead of waiting for its leases to run out.
 */
export function conversationClaimsMigration(dialect: StoreDialect): Migration {
  const { key } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'conversation_claims')
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('conversation_id', key, (col) => col.notNull())
        .addColumn('owner', key)
        .addColumn('previous_owner', key)
        .addColumn('token', 'bigint', (col) => col.notNull())
        // 0 once released; renewed with the owner's heartbeat while its turn runs.
        .addColumn('claimed_until', 'bigint', (col) => col.notNull())
        .addPrimaryKeyConstraint('conversation_claims_pk', ['channel', 'conversation_id'])
        .execute();
      await db.schema.createIndex('conversation_claims_owner_idx').on('conversation_claims').columns(['owner']).execute();
      await createTable(db, dialect, 'processes')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('host', key, (col) => col.notNull())
        .addColumn('pid', 'bigint', (col) => col.notNull())
        .addColumn('started_at', 'bigint', (col) => col.notNull())
        .addColumn('heartbeat_at', 'bigint', (col) => col.notNull())
        .execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.dropTable('processes').execute();
      await db.schema.dropTable('conversation_claims').execute();
    },
  };
}
