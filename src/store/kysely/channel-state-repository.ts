import type { ChannelStateRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** Small values each channel keeps across restarts, keyed by (channel, key). */
export class KyselyChannelStateRepository implements ChannelStateRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  get(channel: string, key: string): Promise<string | undefined> {
    return storeOperation('channelState.get', async () => {
      const row = await this.#ctx.db.selectFrom('channel_state').select('value').where('channel', '=', channel).where('key', '=', key).executeTakeFirst();
      return row?.value;
    });
  }

  set(channel: string, key: string, value: string): Promise<void> {
    return storeOperation('channelState.set', async () => {
      await this.#ctx.dialect
        .upsert(this.#ctx.db.insertInto('channel_state').values({ channel, key, value, updated_at: this.#ctx.now() }), ['channel', 'key'], {
          replace: ['value', 'updated_at'],
        })
        .execute();
    });
  }

  delete(channel: string, key: string): Promise<void> {
    return storeOperation('channelState.delete', async () => {
      await this.#ctx.db.deleteFrom('channel_state').where('channel', '=', channel).where('key', '=', key).execute();
    });
  }
}
