import type { Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { ChannelAccount, User } from '../../domain/model.js';
import type { PhoneSource, UserRepository } from '../../domain/ports/store.js';
import { prepared } from './prepared-query.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toChannelAccount, toDate, toUser } from './rows.js';
import type { Database } from './schema.js';
import { classifyDriverError, storeOperation } from './store-errors.js';

/** Users and the channel accounts bound to them. */
export class KyselyUserRepository implements UserRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  resolveAccount(input: {
    channel: string;
    accountId: string;
    displayName?: string | null;
  }): Promise<{ user: User; account: ChannelAccount; created: boolean }> {
    return storeOperation('users.resolveAccount', async () => {
      // Hot path: a known account costs one round trip.
      const known = await findAccount(this.#ctx.db, input.channel, input.accountId);
      if (known !== undefined) return { user: known.user, account: known.account, created: false };

      return atomically(this.#ctx.db, async (db) => {
        const now = this.#ctx.now();
        const user = { id: newId(), display_name: input.displayName ?? null, phone: null, created_at: now };
        const account = { channel: input.channel, account_id: input.accountId, user_id: user.id, created_at: now };
        await db.insertInto('users').values(user).execute();
        const inserted = await this.#ctx.dialect
          .insertOrIgnore(db.insertInto('channel_accounts').values(account), ['channel', 'account_id'])
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) {
          return { user: toUser(user), account: toChannelAccount(account), created: true };
        }
        // A concurrent first contact of the same account won the race: drop our user and return theirs.
        await db.deleteFrom('users').where('id', '=', user.id).execute();
        const winner = await findAccount(db, input.channel, input.accountId);
        if (winner === undefined) {
          throw new StoreError('query_failed', `Channel account ${input.channel}/${input.accountId} vanished while it was being created; retry.`);
        }
        return { ...winner, created: false };
      });
    });
  }

  ensureUser(input: { id: string; displayName?: string | null }): Promise<{ user: User; created: boolean }> {
    return storeOperation('users.ensureUser', async () => {
      const row = { id: input.id, display_name: input.displayName ?? null, phone: null, created_at: this.#ctx.now() };
      // Insert-or-ignore: two first contacts of the same directory user at once both end with the one row.
      const inserted = await this.#ctx.dialect.insertOrIgnore(this.#ctx.db.insertInto('users').values(row), ['id']).executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { user: toUser(row), created: true };
      const existing = await this.#ctx.db.selectFrom('users').selectAll().where('id', '=', input.id).executeTakeFirst();
      if (existing === undefined) throw new StoreError('query_failed', `User ${input.id} vanished while it was being ensured; retry.`);
      return { user: toUser(existing), created: false };
    });
  }

  findById(userId: string): Promise<User | undefined> {
    return storeOperation('users.findById', async () => {
      const row = await this.#ctx.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
      return row === undefined ? undefined : toUser(row);
    });
  }

  findByAccount(channel: string, accountId: string): Promise<User | undefined> {
    return storeOperation('users.findByAccount', async () => (await findAccount(this.#ctx.db, channel, accountId))?.user);
  }

  findByPhone(phone: string): Promise<User | undefined> {
    return storeOperation('users.findByPhone', async () => {
      const row = await this.#ctx.db.selectFrom('users').selectAll().where('phone', '=', phone).executeTakeFirst();
      return row === undefined ? undefined : toUser(row);
    });
  }

  findPhoneHolder(phone: string): Promise<{ user: User; verified: boolean } | undefined> {
    return storeOperation('users.findPhoneHolder', async () => {
      const row = await this.#ctx.dialect.lockForUpdate(this.#ctx.db.selectFrom('users').selectAll().where('phone', '=', phone)).executeTakeFirst();
      return row === undefined ? undefined : { user: toUser(row), verified: row.phone_source !== 'typed' };
    });
  }

  /** @throws StoreError `conflict` when another user already has the phone, `not_found` for an unknown user. */
  setPhone(userId: string, phone: string | null, source: PhoneSource = 'admin'): Promise<void> {
    return storeOperation('users.setPhone', async () => {
      try {
        const result = await this.#ctx.db
          .updateTable('users')
          .set({ phone, phone_source: phone === null ? null : source })
          .where('id', '=', userId)
          .executeTakeFirst();
        if (result.numUpdatedRows === 0n) throw new StoreError('not_found', `User ${userId} does not exist.`);
      } catch (error) {
        if (classifyDriverError(error) === 'conflict') {
          // The phone itself stays out of the message: it is personal data.
          throw new StoreError('conflict', `That phone number is already bound to another user; relink instead of setting it on user ${userId}.`, {
            cause: error,
          });
        }
        throw error;
      }
    });
  }

  /**
   * Binds the account to `userId`, creating the binding when the account is new.
   *
   * @returns the previous user id, or undefined when the account was not bound yet.
   * @throws StoreError `not_found` when `userId` does not exist.
   */
  relinkAccount(input: { channel: string; accountId: string; userId: string; carrySessions?: boolean }): Promise<string | undefined> {
    return storeOperation('users.relinkAccount', async () => {
      try {
        return await atomically(this.#ctx.db, async (db) => {
          const current = await this.#ctx.dialect
            .lockForUpdate(db.selectFrom('channel_accounts').select('user_id').where('channel', '=', input.channel).where('account_id', '=', input.accountId))
            .executeTakeFirst();
          if (current === undefined) {
            await db
              .insertInto('channel_accounts')
              .values({ channel: input.channel, account_id: input.accountId, user_id: input.userId, created_at: this.#ctx.now() })
              .execute();
            return undefined;
          }
          if (current.user_id !== input.userId) {
            await db
              .updateTable('channel_accounts')
              .set({ user_id: input.userId })
              .where('channel', '=', input.channel)
              .where('account_id', '=', input.accountId)
              .execute();
            if (input.carrySessions === true) await carryAccountSessions(db, { ...input, previousUserId: current.user_id });
          }
          return current.user_id;
        });
      } catch (error) {
        if (classifyDriverError(error) === 'foreign_key') {
          throw new StoreError('not_found', `Cannot relink ${input.channel}/${input.accountId}: user ${input.userId} does not exist.`, { cause: error });
        }
        throw error;
      }
    });
  }

  listAccounts(userId: string): Promise<ChannelAccount[]> {
    return storeOperation('users.listAccounts', async () => {
      const rows = await this.#ctx.db
        .selectFrom('channel_accounts')
        .selectAll()
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .orderBy('channel')
        .orderBy('account_id')
        .execute();
      return rows.map(toChannelAccount);
    });
  }
}

/**
 * Moves the account's own conversations to the user it now belongs to, on every channel of its namespace (the
 * account's `channel` is its namespace, which several channels may share): the previous user's sessions the account
 * wrote in, where no other account of the previous user wrote. A conversation the previous user also had through
 * another account stays theirs, so the new owner never reads what the previous one wrote elsewhere. Who wrote is the
 * durable inbox's record (`inbound_messages`: account, and the user it was then) and, for messages stored without a
 * turn, `recorded_messages` (the conversation's person); a conversation with nothing in either (stored before the
 * inbox existed) stays too.
 */
async function carryAccountSessions(db: Kysely<Database>, move: { channel: string; accountId: string; userId: string; previousUserId: string }): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ user_id: move.userId })
    .where('user_id', '=', move.previousUserId)
    .where(({ exists, or, selectFrom }) =>
      or([
        exists(
          selectFrom('inbound_messages as i')
            .select('i.id')
            .whereRef('i.session_id', '=', 'sessions.id')
            .where('i.account_namespace', '=', move.channel)
            .where('i.account_id', '=', move.accountId),
        ),
        exists(
          selectFrom('recorded_messages as r')
            .select('r.message_id')
            .whereRef('r.session_id', '=', 'sessions.id')
            .where('r.account_namespace', '=', move.channel)
            .where('r.account_id', '=', move.accountId),
        ),
      ]),
    )
    .where(({ exists, not, or, selectFrom }) =>
      not(
        or([
          exists(
            selectFrom('inbound_messages as i')
              .select('i.id')
              .whereRef('i.session_id', '=', 'sessions.id')
              .where('i.user_id', '=', move.previousUserId)
              .where((inner) => inner.or([inner('i.account_namespace', '<>', move.channel), inner('i.account_id', '<>', move.accountId)])),
          ),
          exists(
            selectFrom('recorded_messages as r')
              .select('r.message_id')
              .whereRef('r.session_id', '=', 'sessions.id')
              .where('r.user_id', '=', move.previousUserId)
              .where((inner) => inner.or([inner('r.account_namespace', '<>', move.channel), inner('r.account_id', '<>', move.accountId)])),
          ),
        ]),
      ),
    )
    .execute();
}

const findAccountQuery = prepared((db, $: { channel: string; accountId: string }) =>
  db
    .selectFrom('channel_accounts as a')
    .innerJoin('users as u', 'u.id', 'a.user_id')
    .select(['u.id', 'u.display_name', 'u.phone', 'u.created_at as user_created_at', 'a.channel', 'a.account_id', 'a.created_at as account_created_at'])
    .where('a.channel', '=', $.channel)
    .where('a.account_id', '=', $.accountId),
);

async function findAccount(db: Kysely<Database>, channel: string, accountId: string): Promise<{ user: User; account: ChannelAccount } | undefined> {
  const row = (await findAccountQuery.execute(db, { channel, accountId })).rows[0];
  if (row === undefined) return undefined;
  return {
    user: { id: row.id, displayName: row.display_name, phone: row.phone, createdAt: toDate(row.user_created_at) },
    account: { channel: row.channel, accountId: row.account_id, userId: row.id, createdAt: toDate(row.account_created_at) },
  };
}
