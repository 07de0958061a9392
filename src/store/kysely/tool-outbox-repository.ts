import type { ToolOutboxEntry, ToolOutboxRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

const REMOVE_CHUNK = 500;

/** The tool outbox of `tools.dispatch: "streams"` (see {@link ToolOutboxRepository}). */
export class KyselyToolOutboxRepository implements ToolOutboxRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  put(entry: Omit<ToolOutboxEntry, 'publishedAt' | 'createdAt'>): Promise<void> {
    return storeOperation('toolOutbox.put', async () => {
      const row = {
        call_key: entry.callKey,
        response_channel: entry.responseChannel,
        payload: entry.payload,
        attempt: entry.attempt,
        deadline: entry.deadline,
        published_at: null,
      };
      const { db, dialect } = this.#ctx;
      await dialect
        .upsert(db.insertInto('tool_outbox').values({ ...row, created_at: this.#ctx.now() }), ['call_key'], {
          replace: ['response_channel', 'payload', 'attempt', 'deadline', 'published_at'],
        })
        .execute();
    });
  }

  markPublished(callKey: string, attempt: number): Promise<void> {
    return storeOperation('toolOutbox.markPublished', async () => {
      await this.#ctx.db
        .updateTable('tool_outbox')
        .set({ published_at: this.#ctx.now() })
        .where('call_key', '=', callKey)
        .where('attempt', '=', attempt)
        .execute();
    });
  }

  list(responseChannel: string, options: { readonly dueOnly: boolean; readonly limit: number }): Promise<ToolOutboxEntry[]> {
    return storeOperation('toolOutbox.list', async () => {
      let query = this.#ctx.db.selectFrom('tool_outbox').selectAll().where('response_channel', '=', responseChannel);
      if (options.dueOnly) query = query.where('published_at', 'is', null);
      const rows = await query.orderBy('created_at').orderBy('call_key').limit(options.limit).execute();
      return rows.map((row) => ({
        callKey: row.call_key,
        responseChannel: row.response_channel,
        payload: row.payload,
        attempt: Number(row.attempt),
        deadline: Number(row.deadline),
        publishedAt: row.published_at === null ? null : Number(row.published_at),
        createdAt: Number(row.created_at),
      }));
    });
  }

  remove(...callKeys: string[]): Promise<void> {
    return storeOperation('toolOutbox.remove', async () => {
      // Chunks keep each statement well under the databases' limits on bound parameters.
      for (let start = 0; start < callKeys.length; start += REMOVE_CHUNK) {
        await this.#ctx.db
          .deleteFrom('tool_outbox')
          .where('call_key', 'in', callKeys.slice(start, start + REMOVE_CHUNK))
          .execute();
      }
    });
  }

  removeExpired(before: number): Promise<number> {
    return storeOperation('toolOutbox.removeExpired', async () => {
      const result = await this.#ctx.db.deleteFrom('tool_outbox').where('deadline', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
