import type { ProfileRecord, ProfileRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** A user's profile settings as JSON text, one row per user; saving replaces. */
export class KyselyProfileRepository implements ProfileRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  get(userId: string): Promise<ProfileRecord | undefined> {
    return storeOperation('profiles.get', async () => {
      const row = await this.#ctx.db.selectFrom('profiles').select(['settings', 'updated_at']).where('user_id', '=', userId).executeTakeFirst();
      return row === undefined ? undefined : { raw: row.settings, updatedAt: new Date(Number(row.updated_at)) };
    });
  }

  save(userId: string, settingsJson: string): Promise<void> {
    return storeOperation('profiles.save', async () => {
      const values = { user_id: userId, settings: settingsJson, updated_at: this.#ctx.now() };
      await this.#ctx.dialect.upsert(this.#ctx.db.insertInto('profiles').values(values), ['user_id'], { replace: ['settings', 'updated_at'] }).execute();
    });
  }

  saveIfAbsent(userId: string, settingsJson: string): Promise<boolean> {
    return storeOperation('profiles.saveIfAbsent', async () => {
      const values = { user_id: userId, settings: settingsJson, updated_at: this.#ctx.now() };
      // One row counts only when this insert made it: the conflict case writes none.
      const inserted = await this.#ctx.dialect.insertOrIgnore(this.#ctx.db.insertInto('profiles').values(values), ['user_id']).executeTakeFirst();
      return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
    });
  }
}
