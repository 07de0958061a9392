import { sql } from 'kysely';
import type { ClaimOutcome, ConversationClaimRepository, ConversationFence } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/**
 * Conversation claims, one row per conversation that ever had a turn. Like channel leases, a claim is an insert that
 * does nothing when the row exists, then one update guarded by "free, run out, or mine": atomic on every back end
 * (SQLite has one writer; PostgreSQL and InnoDB re-check the guard on the row they waited for), so two processes
 * never both hold a conversation. Released claims keep their row, so tokens only grow.
 */
export class KyselyConversationClaimRepository implements ConversationClaimRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  claim(input: { readonly channel: string; readonly conversationId: string; readonly owner: string; readonly now: number; readonly ttlMs: number }): Promise<ClaimOutcome> {
    return storeOperation('claims.claim', async () => {
      const { channel, conversationId, owner, now, ttlMs } = input;
      const { db, dialect } = this.#ctx;
      const key = (query: any) => query.where('channel', '=', channel).where('conversation_id', '=', conversationId);
      await dialect.insertOrIgnore(db.insertInto('conversation_claims').values({ channel, conversation_id: conversationId, owner: null, previous_owner: null, token: 0, claimed_until: 0 }), ['channel', 'conversation_id']).execute();
      const taken = await key(
        db
          .updateTable('conversation_claims')
          // previous_owner first: MySQL assigns left to right, each assignment seeing the ones before it.
          .set({ previous_owner: sql`owner`, owner, token: sql`token + 1`, claimed_until: now + ttlMs }),
      )
        .where((eb: any) => eb.or([eb('claimed_until', '<', now), eb('owner', '=', owner), eb('owner', 'is', null)]))
        .executeTakeFirst();
      const row = await key(db.selectFrom('conversation_claims').select(['owner', 'previous_owner', 'token'])).executeTakeFirstOrThrow();
      if (Number(taken.numUpdatedRows) === 1 && row.owner === owner) return { claimed: true, token: Number(row.token), previousOwner: row.previous_owner };
      return { claimed: false, owner: row.owner ?? '' };
    });
  }

  holds(fence: ConversationFence): Promise<boolean> {
    return storeOperation('claims.holds', async () => {
      const { db, dialect } = this.#ctx;
      const select = db
        .selectFrom('conversation_claims')
        .select(['owner', 'token'])
        .where('channel', '=', fence.channel)
        .where('conversation_id', '=', fence.conversationId);
      const row = await dialect.lockForUpdate(select).executeTakeFirst();
      return row !== undefined && row.owner === fence.owner && Number(row.token) === fence.token;
    });
  }

  release(fence: ConversationFence): Promise<void> {
    return storeOperation('claims.release', async () => {
      await this.#ctx.db
        .updateTable('conversation_claims')
        .set({ claimed_until: 0 })
        .where('channel', '=', fence.channel)
        .where('conversation_id', '=', fence.conversationId)
        .where('owner', '=', fence.owner)
        .where('token', '=', fence.token)
        .execute();
    });
  }

  renew(owner: string, now: number, ttlMs: number): Promise<number> {
    return storeOperation('claims.renew', async () => {
      const result = await this.#ctx.db
        .updateTable('conversation_claims')
        .set({ claimed_until: now + ttlMs })
        .where('owner', '=', owner)
        .where('claimed_until', '>', 0)
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    });
  }
}
