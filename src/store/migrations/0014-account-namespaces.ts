import type { Kysely, Migration } from 'kysely';
import type { StoreDialect } from '../kysely/dialect-strategy.js';
import { textTypes } from './dialect-schema.js';

/** The Telegram bot channel's name, and the namespace its accounts are bound under from now on. */
const BOT_CHANNEL = 'telegram-bot';
const TELEGRAM = 'telegram';

/**
 * Account namespaces (`Channel.accountNamespace`): channels that see the same people under the same ids share one
 * namespace, and identity binds accounts under it, no longer under the channel's name. The Telegram bot's accounts
 * move from `telegram-bot` to `telegram`, so that a Telegram user account channel finds the same people: in
 * `channel_accounts` (an account already bound under `telegram` keeps that binding, and its `telegram-bot` row stays
 * unused) and in the identity audit. Sessions, the inbox's and the outbox's `channel` stay the channel's name.
 *
 * `inbound_messages.account_namespace`: the namespace of the account that wrote, so that a relink carries along the
 * account's own conversations on every channel of its namespace (filled from `channel` for the rows of before).
 *
 * Down moves `telegram` accounts back to `telegram-bot`, the only Telegram channel there was before.
 */
export function accountNamespacesMigration(dialect: StoreDialect): Migration {
  const { key, long } = textTypes(dialect);
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('inbound_messages').addColumn('account_namespace', key).execute();
      await db
        .updateTable('inbound_messages')
        .set((eb) => ({ account_namespace: eb.ref('channel') }))
        .execute();
      await db.updateTable('inbound_messages').set({ account_namespace: TELEGRAM }).where('channel', '=', BOT_CHANNEL).execute();
      await moveAccounts(db, BOT_CHANNEL, TELEGRAM);
    },

    async down(db: Kysely<any>): Promise<void> {
      await moveAccounts(db, TELEGRAM, BOT_CHANNEL);
      await db.schema.alterTable('inbound_messages').dropColumn('account_namespace').execute();
    },
  };
}

async function moveAccounts(db: Kysely<any>, from: string, to: string): Promise<void> {
  await db
    .updateTable('channel_accounts')
    .set({ channel: to })
    .where('channel', '=', from)
    .where(({ exists, not, selectFrom }) =>
      not(
        exists(
          selectFrom('channel_accounts as taken')
            .select('taken.account_id')
            .where('taken.channel', '=', to)
            .whereRef('taken.account_id', '=', 'channel_accounts.account_id'),
        ),
      ),
    )
    .execute();
  await db.updateTable('identity_events').set({ channel: to }).where('channel', '=', from).execute();
}
