import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { createTable, dropIndex, textTypes } from './dialect-schema.js';

/**
 * Operators are people (issue #39): named accounts instead of one shared admin token.
 *
 * `operators`: one row per person who operates Palaver. `name` is shown in the audit; `name_key` is its lower-case
 * form, unique, so two operators never differ only by case (the same on every dialect, whatever its collation).
 * `role` is `operator` or `admin`. `token_digest` is the SHA-256 of the operator's token (the token is shown once
 * and never stored). `disabled_at` set: the account no longer signs in; rows are never deleted, so a name in the
 * audit always names one person.
 *
 * `dashboard_sessions.operator_id`: whose sign-in it is (null: signed in with the admin token).
 * `admin_actions.operator_id`: the account that acted (null: the admin token, whose actor is only what it claims).
 */
export function operatorAccountsMigration(dialect: StoreDialect): Migration {
  const { key } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await createTable(db, dialect, 'operators')
        .addColumn('id', key, (col) => col.primaryKey())
        .addColumn('name', key, (col) => col.notNull())
        .addColumn('name_key', key, (col) => col.notNull().unique())
        .addColumn('role', key, (col) => col.notNull())
        .addColumn('token_digest', key, (col) => col.notNull().unique())
        .addColumn('created_at', 'bigint', (col) => col.notNull())
        .addColumn('disabled_at', 'bigint')
        .execute();
      await db.schema.alterTable('dashboard_sessions').addColumn('operator_id', key).execute();
      await db.schema.createIndex('dashboard_sessions_operator_idx').on('dashboard_sessions').column('operator_id').execute();
      await db.schema.alterTable('admin_actions').addColumn('operator_id', key).execute();
    },

    async down(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('admin_actions').dropColumn('operator_id').execute();
      await dropIndex(db, dialect, 'dashboard_sessions_operator_idx', 'dashboard_sessions');
      await db.schema.alterTable('dashboard_sessions').dropColumn('operator_id').execute();
      await db.schema.dropTable('operators').execute();
    },
  };
}
