import { type Kysely, sql } from 'kysely';
import type { ClaimOutcome, ConversationClaimRepository, ConversationFence } from '../../domain/ports/store.js';
import { prepared } from './prepared-query.js';
import type { Database } from './schema.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { retryingDeadlocks, storeOperation } from './store-errors.js';

/**
 * Conversation claims, one row per conversation that ever had a turn. A claim is an insert that, when the row exists,
 * updates it only where "free, run out, or mine" holds: atomic on every back end (SQLite has one writer; PostgreSQL
 * and InnoDB re-check the guard on the row they waited for), so two processes never both hold a conversation.
 * Released claims keep their row, so tokens only grow.
 *
 * Every turn claims, so on SQLite and PostgreSQL that is one statement (`ON CONFLICT … DO UPDATE … WHERE …
 * RETURNING`): on PostgreSQL one round trip instead of five (begin, insert, update, read, commit). MySQL has neither
 * the guard nor RETURNING there, and runs the three statements in a transaction.
 */
export class KyselyConversationClaimRepository implements ConversationClaimRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  claim(input: {
    readonly channel: string;
    readonly conversationId: string;
    readonly owner: string;
    readonly now: number;
    readonly ttlMs: number;
    readonly pausedSession?: string;
  }): Promise<ClaimOutcome> {
    const { channel, conversationId, owner, now, ttlMs, pausedSession } = input;
    const paused = (row: object | undefined) =>
      pausedSession === undefined ? {} : { paused: (row as { paused_at?: unknown } | undefined)?.paused_at != null };
    if (this.#ctx.dialect.guardedUpsertReturning) {
      return storeOperation('claims.claim', async () => {
        const values = { channel, conversationId, owner, now, until: now + ttlMs };
        const [row] =
          pausedSession === undefined
            ? (await claimInOneStatement.execute(this.#ctx.db, values)).rows
            : (await claimReadingPause.execute(this.#ctx.db, { ...values, sessionId: pausedSession })).rows;
        if (row !== undefined) return { claimed: true, token: Number(row.token), previousOwner: row.previous_owner, ...paused(row) };
        // Refused: who holds it is only for the caller's logs, so a read after the fact is enough.
        const [held] = (await readClaim.execute(this.#ctx.db, { channel, conversationId })).rows;
        return { claimed: false, owner: held?.owner ?? '' };
      });
    }
    // One transaction: one commit for the three statements. Two first claims of a conversation can deadlock on
    // InnoDB (each insert's duplicate key check): the loser runs again.
    return storeOperation('claims.claim', () =>
      retryingDeadlocks(() =>
        atomically(this.#ctx.db, async (db) => {
          const key = { channel, conversationId };
          await insertFreeClaim.execute(db, key);
          const taken = await takeClaim.execute(db, { ...key, owner, now, until: now + ttlMs });
          const [row] = (await readClaim.execute(db, key)).rows;
          if (row !== undefined && Number(taken.numAffectedRows ?? 0n) === 1 && row.owner === owner) {
            const [session] = pausedSession === undefined ? [] : (await readPause.execute(db, { sessionId: pausedSession })).rows;
            return { claimed: true, token: Number(row.token), previousOwner: row.previous_owner, ...paused(session) };
          }
          return { claimed: false, owner: row?.owner ?? '' };
        }),
      ),
    );
  }

  holds(fence: ConversationFence): Promise<boolean> {
    return storeOperation('claims.holds', async () => {
      const [row] = (await lockClaim.execute(this.#ctx.db, { channel: fence.channel, conversationId: fence.conversationId })).rows;
      return row !== undefined && row.owner === fence.owner && Number(row.token) === fence.token;
    });
  }

  release(fence: ConversationFence): Promise<void> {
    return storeOperation('claims.release', async () => {
      await releaseClaim.execute(this.#ctx.db, fence);
    });
  }

  releaseIfHeld(fence: ConversationFence): Promise<boolean> {
    return storeOperation('claims.releaseIfHeld', async () => {
      if (this.#ctx.dialect.guardedUpsertReturning) return (await releaseReturning.execute(this.#ctx.db, fence)).rows.length === 1;
      // MySQL: no RETURNING; the locking read, then the release under its lock.
      const [row] = (await lockClaim.execute(this.#ctx.db, { channel: fence.channel, conversationId: fence.conversationId })).rows;
      if (row === undefined || row.owner !== fence.owner || Number(row.token) !== fence.token) return false;
      await releaseClaim.execute(this.#ctx.db, fence);
      return true;
    });
  }

  renew(owner: string, now: number, ttlMs: number): Promise<number> {
    return storeOperation('claims.renew', async () => {
      const result = await renewClaims.execute(this.#ctx.db, { owner, until: now + ttlMs });
      return Number(result.numAffectedRows ?? 0n);
    });
  }
}

// A turn claims, checks and releases its conversation: these run once or more per turn, so they are prepared. The
// heartbeat renews every half second, idle or not: prepared, it allocates next to nothing (see leases.ts).

const renewClaims = prepared((db, $: { owner: string; until: number }) =>
  db.updateTable('conversation_claims').set({ claimed_until: $.until }).where('owner', '=', $.owner).where('claimed_until', '>', 0),
);

interface ClaimArgs {
  channel: string;
  conversationId: string;
  owner: string;
  now: number;
  until: number;
}

/** The claim as one guarded upsert. Qualified: PostgreSQL would find an unqualified column in both the table and `excluded`. */
function claimUpsert(db: Kysely<Database>, $: ClaimArgs) {
  return db
    .insertInto('conversation_claims')
    .values({ channel: $.channel, conversation_id: $.conversationId, owner: $.owner, previous_owner: null, token: 1, claimed_until: $.until })
    .onConflict((oc) =>
      oc
        .columns(['channel', 'conversation_id'])
        .doUpdateSet({
          previous_owner: sql.ref('conversation_claims.owner'),
          owner: $.owner,
          token: sql`conversation_claims.token + 1`,
          claimed_until: $.until,
        })
        .where((eb) =>
          eb.or([
            eb('conversation_claims.claimed_until', '<', $.now),
            eb('conversation_claims.owner', '=', $.owner),
            eb('conversation_claims.owner', 'is', null),
          ]),
        ),
    );
}

/** Since when the session's messages are held: paused by an operator, or a turn waiting for an approval. */
const heldSince = sql<number | string | null>`coalesce(paused_at, approval_pending_at)`.as('paused_at');

const claimInOneStatement = prepared((db, $: ClaimArgs) => claimUpsert(db, $).returning(['owner', 'previous_owner', 'token']));

// The same claim, answering with the session's pause too: the turn that claims learns it without a read of its own.
const claimReadingPause = prepared((db, $: ClaimArgs & { sessionId: string }) =>
  claimUpsert(db, $).returning((eb) => [
    'owner',
    'previous_owner',
    'token',
    eb.selectFrom('sessions').select(heldSince).where('id', '=', $.sessionId).as('paused_at'),
  ]),
);

const readPause = prepared((db, $: { sessionId: string }) => db.selectFrom('sessions').select(heldSince).where('id', '=', $.sessionId));

const insertFreeClaim = prepared((db, $: { channel: string; conversationId: string }, dialect) =>
  dialect.insertOrIgnore(
    db
      .insertInto('conversation_claims')
      .values({ channel: $.channel, conversation_id: $.conversationId, owner: null, previous_owner: null, token: 0, claimed_until: 0 }),
    ['channel', 'conversation_id'],
  ),
);

const takeClaim = prepared((db, $: { channel: string; conversationId: string; owner: string; now: number; until: number }) =>
  db
    .updateTable('conversation_claims')
    // previous_owner first: MySQL assigns left to right, each assignment seeing the ones before it.
    .set({ previous_owner: sql`owner`, owner: $.owner, token: sql`token + 1`, claimed_until: $.until })
    .where('channel', '=', $.channel)
    .where('conversation_id', '=', $.conversationId)
    .where((eb) => eb.or([eb('claimed_until', '<', $.now), eb('owner', '=', $.owner), eb('owner', 'is', null)])),
);

const readClaim = prepared((db, $: { channel: string; conversationId: string }) =>
  db
    .selectFrom('conversation_claims')
    .select(['owner', 'previous_owner', 'token'])
    .where('channel', '=', $.channel)
    .where('conversation_id', '=', $.conversationId),
);

const lockClaim = prepared((db, $: { channel: string; conversationId: string }, dialect) =>
  dialect.lockForUpdate(
    db.selectFrom('conversation_claims').select(['owner', 'token']).where('channel', '=', $.channel).where('conversation_id', '=', $.conversationId),
  ),
);

/** The release of one claim, by its owner and token: a claim taken over since is left alone. */
function releaseOf(db: Kysely<Database>, $: ConversationFence) {
  return db
    .updateTable('conversation_claims')
    .set({ claimed_until: 0 })
    .where('channel', '=', $.channel)
    .where('conversation_id', '=', $.conversationId)
    .where('owner', '=', $.owner)
    .where('token', '=', $.token);
}

const releaseClaim = prepared((db, $: ConversationFence) => releaseOf(db, $));

const releaseReturning = prepared((db, $: ConversationFence) => releaseOf(db, $).returning('token'));
