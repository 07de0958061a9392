import type { InboundRepository } from '../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** Redelivery keys of inbound updates (deduplication). */
export class KyselyInboundRepository implements InboundRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /** One statement; atomic against concurrent deliveries of the same key. */
  remember(channel: string, key: string): Promise<boolean> {
    return storeOperation('inbound.remember', async () => {
      const result = await this.#ctx.db
        .insertInto('inbound_keys')
        .values({ channel, key, created_at: this.#ctx.now() })
        .onConflict((oc) => oc.columns(['channel', 'key']).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
    });
  }
}
