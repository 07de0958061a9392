import type { InboundRepository } from '../../domain/ports/store.js';
import { prepared } from './prepared-query.js';
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
      const result = await rememberQuery.execute(this.#ctx.db, { channel, key, now: this.#ctx.now() });
      return result.numAffectedRows === 1n;
    });
  }
}

const rememberQuery = prepared((db, $: { channel: string; key: string; now: number }, dialect) =>
  dialect.insertOrIgnore(db.insertInto('inbound_keys').values({ channel: $.channel, key: $.key, created_at: $.now }), ['channel', 'key']),
);
