import type { PersonRateOutcome, PersonRateRepository, PersonRateRequest, RateLimitedKind } from '../../domain/ports/store.js';
import type { Kysely } from 'kysely';
import { newId } from '../../domain/ids.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import type { Database } from './schema.js';
import { storeOperation } from './store-errors.js';

/** Per-person rate limits in the database, so that every process on it counts the same messages. */
export class KyselyPersonRateRepository implements PersonRateRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  lock(userId: string): Promise<void> {
    return storeOperation('personRate.lock', () => this.#lock(this.#ctx.db, userId));
  }

  /**
   * The user's row serialises the accepts of one person across processes (SQLite: a transaction holds the one
   * connection). Taken before the inbox row is written, so that no foreign key check on the user's row is held first.
   */
  async #lock(db: Kysely<Database>, userId: string): Promise<void> {
    await this.#ctx.dialect.lockForUpdate(db.selectFrom('users').select('id').where('id', '=', userId), { allowReferences: true }).execute();
  }

  take(request: PersonRateRequest): Promise<PersonRateOutcome> {
    return storeOperation('personRate.take', () =>
      atomically(this.#ctx.db, async (db) => {
        const { userId, scope, limit, windowMs, at } = request;
        await this.#lock(db, userId);
        const since = at - windowMs;
        // What left the window counts no more; swept here so the table stays the size of the windows.
        await db.deleteFrom('person_rate_hits').where('user_id', '=', userId).where('scope', '=', scope).where('at', '<=', since).execute();
        const hits = await db
          .selectFrom('person_rate_hits')
          .select('at')
          .where('user_id', '=', userId)
          .where('scope', '=', scope)
          .where('at', '>', since)
          .orderBy('at', 'asc')
          .execute();
        if (hits.length < limit) {
          await db.insertInto('person_rate_hits').values({ id: newId(), user_id: userId, scope, at }).execute();
          return { admitted: true };
        }
        // The window lets one more through once the oldest of the last `limit` counted messages leaves it.
        const freesAt = Number(hits[hits.length - limit]!.at) + windowMs;
        const noticed = await db
          .selectFrom('person_rate_notices')
          .select('noticed_until')
          .where('user_id', '=', userId)
          .where('scope', '=', scope)
          .executeTakeFirst();
        const notice = noticed === undefined || Number(noticed.noticed_until) <= at;
        if (notice) {
          await this.#ctx.dialect
            .upsert(db.insertInto('person_rate_notices').values({ user_id: userId, scope, noticed_until: freesAt }), ['user_id', 'scope'], {
              replace: ['noticed_until'],
            })
            .execute();
        }
        return { admitted: false, notice, freesAt };
      }),
    );
  }

  mark(inboundId: string, kind: RateLimitedKind): Promise<void> {
    return storeOperation('personRate.mark', async () => {
      await this.#ctx.db.updateTable('inbound_messages').set({ rate_limited: kind }).where('id', '=', inboundId).execute();
    });
  }
}
