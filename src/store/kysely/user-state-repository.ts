import type { Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { UserStateRecord } from '../../domain/model.js';
import type { UserStateRepository } from '../../domain/ports/store.js';
import type { DialectStrategy } from './dialect-strategy.js';
import { prepared } from './prepared-query.js';
import type { Database } from './schema.js';
import type { RepositoryContext } from './repository-context.js';
import { toUserState } from './rows.js';
import { storeOperation } from './store-errors.js';

/** Versioned per-user JSON state with optimistic concurrency. */
export class KyselyUserStateRepository implements UserStateRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  get(userId: string): Promise<UserStateRecord | undefined> {
    return storeOperation('userState.get', async () => {
      const row = (await getQuery.execute(this.#ctx.db, { userId })).rows[0];
      return row === undefined ? undefined : toUserState(row);
    });
  }

  /**
   * Saves `data` as JSON in one statement. The first save creates version 1; each save adds one.
   * `expectedVersion` 0 means "there is no state yet". Without `expectedVersion` the write always wins.
   *
   * @returns the new version, or false when `expectedVersion` did not match the stored one.
   * @throws StoreError `invalid_state` when `data` has no JSON form, `foreign_key` for an unknown user.
   */
  save(userId: string, data: unknown, expectedVersion?: number): Promise<number | false> {
    return storeOperation('userState.save', async () => {
      const json = JSON.stringify(data) as string | undefined;
      if (json === undefined) throw new StoreError('invalid_state', `User state must be JSON-serialisable, got ${typeof data}.`);
      if (expectedVersion === undefined) return this.#upsert(userId, json);
      const { db } = this.#ctx;
      const now = this.#ctx.now();
      // The written version is known from the one row written (or none): no RETURNING needed.
      if (expectedVersion === 0) return (await insertFirstQuery.execute(db, { userId, data: json, now })).numAffectedRows === 1n ? 1 : false;
      const updated = await updateVersionQuery.execute(db, { userId, data: json, now, expectedVersion });
      return updated.numAffectedRows === 1n ? expectedVersion + 1 : false;
    });
  }

  async #upsert(userId: string, data: string): Promise<number> {
    const { db, dialect } = this.#ctx;
    const values = { userId, data, now: this.#ctx.now() };
    const row = await dialect.writeReturning(
      db,
      (trx) => upsert(trx, values, dialect).returning('version'),
      (trx) => trx.selectFrom('user_state').select('version').where('user_id', '=', userId).executeTakeFirst(),
    );
    if (row === undefined) throw new StoreError('query_failed', `Saving the state of user ${userId} returned no row.`);
    return Number(row.version);
  }
}

const getQuery = prepared((db, $: { userId: string }) => db.selectFrom('user_state').selectAll().where('user_id', '=', $.userId));

/** `expectedVersion` 0: only when there is no state yet. */
const insertFirstQuery = prepared((db, $: { userId: string; data: string; now: number }, dialect) =>
  dialect.insertOrIgnore(db.insertInto('user_state').values({ user_id: $.userId, version: 1, data: $.data, updated_at: $.now }), ['user_id']),
);

const updateVersionQuery = prepared((db, $: { userId: string; data: string; now: number; expectedVersion: number }) =>
  db
    .updateTable('user_state')
    .set((eb) => ({ version: eb('version', '+', 1), data: $.data, updated_at: $.now }))
    .where('user_id', '=', $.userId)
    .where('version', '=', $.expectedVersion),
);

function upsert(db: Kysely<Database>, $: { userId: string; data: string; now: number }, dialect: DialectStrategy) {
  return dialect.upsert(db.insertInto('user_state').values({ user_id: $.userId, version: 1, data: $.data, updated_at: $.now }), ['user_id'], {
    replace: ['data', 'updated_at'],
    increment: 'version',
  });
}
