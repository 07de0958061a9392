import { sql, type Kysely, type Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, textTypes } from './dialect-schema.js';

/** Bytes as each dialect holds them: SQLite's BLOB, PostgreSQL's bytea, MariaDB's LONGBLOB (a MEDIUMBLOB stops at 16 MiB). */
const BYTES = { sqlite: 'blob', postgres: 'bytea', mysql: sql`longblob` } as const;

/**
 * Files people attach to their messages (the web chat's images and PDFs). `attachments` keeps each file's bytes with
 * the conversation it came in and the account that sent it (what a visitor's quota counts); `inbound_messages`
 * names the files of each accepted message (JSON of their references), so a turn that answers it, also after a
 * restart, knows them without another read.
 */
export function attachmentsMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'attachments')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('channel', key, (col) => col.notNull())
        .addColumn('account_id', key, (col) => col.notNull())
        .addColumn('session_id', key, (col) => col.notNull().references('sessions.id').onDelete('cascade'))
        .addColumn('inbound_id', key, (col) => col.notNull())
        .addColumn('kind', key, (col) => col.notNull())
        .addColumn('mime_type', key, (col) => col.notNull())
        .addColumn('name', long, (col) => col.notNull())
        .addColumn('size', 'bigint', (col) => col.notNull())
        .addColumn('bytes', BYTES[dialect], (col) => col.notNull())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .execute();
      await db.schema.createIndex('attachments_account_idx').on('attachments').columns(['channel', 'account_id']).execute();
      await db.schema.createIndex('attachments_session_idx').on('attachments').column('session_id').execute();
      await db.schema.alterTable('inbound_messages').addColumn('attachments', long).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('inbound_messages').dropColumn('attachments').execute();
      await db.schema.dropTable('attachments').execute();
    },
  };
}
