import type { FocusOwner, FocusRecord, FocusRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** Entities in focus per (session, user, entity type), kept across restarts. */
export class KyselyFocusRepository implements FocusRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  get(owner: FocusOwner, entityType: string): Promise<FocusRecord | undefined> {
    return storeOperation('focus.get', async () => {
      const row = await this.#ctx.db
        .selectFrom('focus')
        .select(['entities', 'loaded_at'])
        .where('session_id', '=', owner.sessionId)
        .where('user_id', '=', owner.userId)
        .where('entity_type', '=', entityType)
        .executeTakeFirst();
      return row === undefined ? undefined : { entityType, entities: JSON.parse(row.entities) as FocusRecord['entities'], loadedAt: Number(row.loaded_at) };
    });
  }

  save(owner: FocusOwner, record: FocusRecord): Promise<void> {
    return storeOperation('focus.save', async () => {
      const values = {
        session_id: owner.sessionId,
        user_id: owner.userId,
        entity_type: record.entityType,
        entities: JSON.stringify(record.entities),
        loaded_at: record.loadedAt,
      };
      await this.#ctx.dialect
        .upsert(this.#ctx.db.insertInto('focus').values(values), ['session_id', 'user_id', 'entity_type'], { replace: ['entities', 'loaded_at'] })
        .execute();
    });
  }

  clear(owner: FocusOwner, entityType: string): Promise<void> {
    return storeOperation('focus.clear', async () => {
      await this.#ctx.db
        .deleteFrom('focus')
        .where('session_id', '=', owner.sessionId)
        .where('user_id', '=', owner.userId)
        .where('entity_type', '=', entityType)
        .execute();
    });
  }
}
