import type { Selectable } from 'kysely';
import type { ChannelLease, ChannelLeaseRepository } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import type { ChannelLeasesTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/**
 * Single-process leases of channels, one row per channel. A claim is an insert that does nothing when the row
 * exists, then an update guarded by "expired or mine": each statement is atomic on its own (SQLite has one writer;
 * PostgreSQL re-checks the guard on the row it waited for), so two processes can never both hold the lease.
 */
export class KyselyChannelLeaseRepository implements ChannelLeaseRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  claim(input: { readonly channel: string; readonly holder: string; readonly now: number; readonly ttlMs: number }): Promise<ChannelLease> {
    return storeOperation('channelLeases.claim', async () => {
      const { channel, holder, now, ttlMs } = input;
      const { db, dialect } = this.#ctx;
      await dialect
        .insertOrIgnore(db.insertInto('channel_leases').values({ channel, holder, acquired_at: now, expires_at: now + ttlMs }), ['channel'])
        .execute();
      await db
        .updateTable('channel_leases')
        .set((eb) => ({
          // A renewal by the holder keeps when it first took the lease; a takeover starts afresh.
          acquired_at: eb.case().when('holder', '=', holder).then(eb.ref('acquired_at')).else(now).end().$castTo<number>(),
          holder,
          expires_at: now + ttlMs,
        }))
        .where('channel', '=', channel)
        .where((eb) => eb.or([eb('holder', '=', holder), eb('expires_at', '<=', now)]))
        .execute();
      const row = await db.selectFrom('channel_leases').selectAll().where('channel', '=', channel).executeTakeFirstOrThrow();
      return toLease(row);
    });
  }

  renew(input: { readonly channel: string; readonly holder: string; readonly now: number; readonly ttlMs: number }): Promise<boolean> {
    return storeOperation('channelLeases.renew', async () => {
      const result = await this.#ctx.db
        .updateTable('channel_leases')
        .set({ expires_at: input.now + input.ttlMs })
        .where('channel', '=', input.channel)
        .where('holder', '=', input.holder)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    });
  }

  release(channel: string, holder: string): Promise<void> {
    return storeOperation('channelLeases.release', async () => {
      await this.#ctx.db.deleteFrom('channel_leases').where('channel', '=', channel).where('holder', '=', holder).execute();
    });
  }

  get(channel: string): Promise<ChannelLease | undefined> {
    return storeOperation('channelLeases.get', async () => {
      const row = await this.#ctx.db.selectFrom('channel_leases').selectAll().where('channel', '=', channel).executeTakeFirst();
      return row ? toLease(row) : undefined;
    });
  }
}

function toLease(row: Selectable<ChannelLeasesTable>): ChannelLease {
  return { channel: row.channel, holder: row.holder, acquiredAt: Number(row.acquired_at), expiresAt: Number(row.expires_at) };
}
