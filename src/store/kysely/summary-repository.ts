import { sql, type Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { SummaryRecord } from '../../domain/model.js';
import { fromStoredCost, toStoredCost } from '../../domain/money.js';
import type { MessageCount, NewSummaryRecord, SummaryBacklog, SummaryRepository } from '../../domain/ports/store.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { ConversationSummariesTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/**
 * Conversation summaries and the claims on writing them. A claim is one guarded statement (an UPDATE of a run-out
 * claim, else an INSERT that does nothing when the row exists): atomic on every back end, so two processes never
 * both hold one. A version is inserted in the statement group that ends the claim it was written under, so a writer
 * whose claim was taken over stores nothing, and a reader never sees part of a version.
 */
export class KyselySummaryRepository implements SummaryRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  latest(sessionId: string): Promise<SummaryRecord | undefined> {
    return storeOperation('summaries.latest', async () => {
      const row = await this.#ctx.db
        .selectFrom('conversation_summaries')
        .selectAll()
        .where('session_id', '=', sessionId)
        // Written in the current context only: a reset or an operator's end starts afresh, without a summary of before.
        .where('from_seq', '=', sql<number>`(select context_since_seq from sessions where id = ${sessionId})`)
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row === undefined ? undefined : toSummary(row);
    });
  }

  backlog(sessionId: string, keepRecent: number): Promise<SummaryBacklog> {
    return storeOperation('summaries.backlog', async () => {
      const { db } = this.#ctx;
      // Separate reads, not one snapshot: a message stored meanwhile is at worst counted or not; the next turn looks again.
      const session = await db.selectFrom('sessions').select('context_since_seq').where('id', '=', sessionId).executeTakeFirst();
      const contextStart = Number(session?.context_since_seq ?? 0);
      const latest = await this.latest(sessionId);
      const afterSeq = Math.max(contextStart, latest?.toSeq ?? 0);
      const unsummarised = db.selectFrom('messages').where('session_id', '=', sessionId).where('audience', '=', 'display').where('seq', '>', afterSeq);
      const total = await unsummarised
        .select((eb) => [eb.fn.countAll<number | string>().as('messages'), eb.fn.sum<number | string | null>('token_estimate').as('tokens')])
        .executeTakeFirst();
      const recent = keepRecent > 0 ? await unsummarised.select(['seq', 'token_estimate']).orderBy('seq', 'desc').limit(keepRecent).execute() : [];
      const all: MessageCount = { messages: Number(total?.messages ?? 0), tokens: Number(total?.tokens ?? 0) };
      const recentTokens = recent.reduce((sum, row) => sum + Number(row.token_estimate), 0);
      return {
        latest,
        contextStart,
        unsummarised: all,
        older: { messages: all.messages - recent.length, tokens: all.tokens - recentTokens },
        recentFrom: recent.length > 0 ? Number(recent[recent.length - 1]!.seq) : null,
      };
    });
  }

  claim(input: { readonly sessionId: string; readonly owner: string; readonly now: number; readonly ttlMs: number }): Promise<string | undefined> {
    return storeOperation('summaries.claim', async () => {
      const { db, dialect } = this.#ctx;
      const claim = { claim_id: newId(), owner: input.owner, expires_at: input.now + input.ttlMs };
      // Free (released) claims have run out too: expires_at is 0 then.
      const taken = await db
        .updateTable('summary_claims')
        .set(claim)
        .where('session_id', '=', input.sessionId)
        .where('expires_at', '<=', input.now)
        .executeTakeFirst();
      if (taken.numUpdatedRows === 1n) return claim.claim_id;
      const inserted = await dialect
        .insertOrIgnore(db.insertInto('summary_claims').values({ session_id: input.sessionId, ...claim }), ['session_id'])
        .executeTakeFirst();
      return inserted.numInsertedOrUpdatedRows === 1n ? claim.claim_id : undefined;
    });
  }

  release(sessionId: string, claimId: string): Promise<void> {
    return storeOperation('summaries.release', async () => {
      await this.#ctx.db
        .updateTable('summary_claims')
        .set({ claim_id: null, owner: null, expires_at: 0 })
        .where('session_id', '=', sessionId)
        .where('claim_id', '=', claimId)
        .execute();
    });
  }

  add(summary: NewSummaryRecord, claimId: string): Promise<SummaryRecord | undefined> {
    return storeOperation('summaries.add', () =>
      atomically(this.#ctx.db, async (db) => {
        // Ending the claim is the fence: it locks the claim's row until the version is in, and matches only its holder.
        const ended = await db
          .updateTable('summary_claims')
          .set({ claim_id: null, owner: null, expires_at: 0 })
          .where('session_id', '=', summary.sessionId)
          .where('claim_id', '=', claimId)
          .executeTakeFirst();
        if (ended.numUpdatedRows !== 1n) return undefined;
        const last = await db
          .selectFrom('conversation_summaries')
          .select((eb) => eb.fn.max('version').as('version'))
          .where('session_id', '=', summary.sessionId)
          .executeTakeFirst();
        const cost = toStoredCost(summary.cost);
        const stored: SummaryRecord = {
          ...summary,
          id: newId(),
          version: Number(last?.version ?? 0) + 1,
          cost: fromStoredCost(cost),
          createdAt: new Date(this.#ctx.now()),
        };
        await db
          .insertInto('conversation_summaries')
          .values({
            id: stored.id,
            session_id: stored.sessionId,
            version: stored.version,
            from_seq: stored.fromSeq,
            to_seq: stored.toSeq,
            text: stored.text,
            model: stored.model,
            input_tokens: stored.inputTokens,
            output_tokens: stored.outputTokens,
            cost,
            currency: stored.currency,
            created_at: stored.createdAt.getTime(),
          })
          .execute();
        return stored;
      }),
    );
  }
}

/** A stored row as the domain reads it. */
export function toSummary(row: Selectable<ConversationSummariesTable>): SummaryRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    version: Number(row.version),
    fromSeq: Number(row.from_seq),
    toSeq: Number(row.to_seq),
    text: row.text,
    model: row.model,
    inputTokens: Number(row.input_tokens),
    outputTokens: Number(row.output_tokens),
    cost: fromStoredCost(row.cost),
    currency: row.currency,
    createdAt: toDate(row.created_at),
  };
}
