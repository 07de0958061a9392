import { sql } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { Session, SessionStatus, TokenUsage } from '../../domain/model.js';
import { addCosts, isZeroCost } from '../../domain/money.js';
import type { SessionRepository } from '../../domain/ports/store.js';
import { prepared } from './prepared-query.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toSession } from './rows.js';
import { currencyMismatch, explainRefusedSessionWrite, sessionNotFound } from './session-write.js';
import { sessionWriteArgs } from './session-write-args.js';
import { storeOperation } from './store-errors.js';

/** Default page size of {@link KyselySessionRepository.listByUser}. */
export const DEFAULT_SESSION_LIST_LIMIT = 50;

/** Sessions: one per (channel, conversation), with running token and cost totals. */
export class KyselySessionRepository implements SessionRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /**
   * Returns the session of (channel, conversationId) as it is — also when it was opened for another user (after a
   * relink the conversation keeps its history). New sessions start `pending`, cost "0" in USD until usage is added.
   */
  open(input: { userId: string; channel: string; conversationId: string }): Promise<Session> {
    return storeOperation('sessions.open', async () => {
      const { db } = this.#ctx;
      const existing = await this.#find(input.channel, input.conversationId);
      if (existing !== undefined) return existing;
      const now = this.#ctx.now();
      const { dialect } = this.#ctx;
      const created = await dialect.writeReturning(
        db,
        (trx) =>
          dialect
            .insertOrIgnore(
              trx.insertInto('sessions').values({
                id: newId(),
                user_id: input.userId,
                channel: input.channel,
                conversation_id: input.conversationId,
                created_at: now,
                updated_at: now,
              }),
              ['channel', 'conversation_id'],
            )
            .returningAll(),
        (trx) =>
          trx.selectFrom('sessions').selectAll().where('channel', '=', input.channel).where('conversation_id', '=', input.conversationId).executeTakeFirst(),
      );
      if (created !== undefined) return toSession(created);
      // Opened concurrently by someone else between our read and our insert.
      const raced = await this.#find(input.channel, input.conversationId);
      if (raced === undefined)
        throw new StoreError('query_failed', `Session ${input.channel}/${input.conversationId} vanished while it was being opened; retry.`);
      return raced;
    });
  }

  findById(sessionId: string): Promise<Session | undefined> {
    return storeOperation('sessions.findById', async () => {
      const row = (await findByIdQuery.execute(this.#ctx.db, { id: sessionId })).rows[0];
      return row === undefined ? undefined : toSession(row);
    });
  }

  resetContext(sessionId: string): Promise<void> {
    return storeOperation('sessions.resetContext', async () => {
      const result = await this.#ctx.db
        .updateTable('sessions')
        .set((eb) => ({ context_since_seq: eb.ref('last_seq'), updated_at: this.#ctx.now() }))
        .where('id', '=', sessionId)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) throw sessionNotFound(sessionId);
    });
  }

  findByConversation(channel: string, conversationId: string): Promise<Session | undefined> {
    return storeOperation('sessions.findByConversation', () => this.#find(channel, conversationId));
  }

  /** The user's sessions, most recently active first; `limit` defaults to 50. */
  listByUser(userId: string, limit = DEFAULT_SESSION_LIST_LIMIT): Promise<Session[]> {
    return storeOperation('sessions.listByUser', async () => {
      const rows = await this.#ctx.db
        .selectFrom('sessions')
        .selectAll()
        .where('user_id', '=', userId)
        .orderBy('updated_at', 'desc')
        .orderBy('id')
        .limit(Math.max(0, Math.trunc(limit)))
        .execute();
      return rows.map(toSession);
    });
  }

  /** @throws StoreError `not_found` for an unknown session. */
  setStatus(sessionId: string, status: SessionStatus): Promise<void> {
    return storeOperation('sessions.setStatus', async () => {
      const result = await setStatusQuery.execute(this.#ctx.db, { id: sessionId, status, now: this.#ctx.now() });
      if (result.numAffectedRows === 0n) throw sessionNotFound(sessionId);
    });
  }

  /** @throws StoreError `not_found` for an unknown session. */
  setTitle(sessionId: string, title: string, options: { readonly ifUntitled?: boolean } = {}): Promise<boolean> {
    return storeOperation('sessions.setTitle', async () => {
      const query = options.ifUntitled ? setFirstTitleQuery : setTitleQuery;
      const result = await query.execute(this.#ctx.db, { id: sessionId, title, now: this.#ctx.now() });
      if (result.numAffectedRows !== 0n) return true;
      // Nothing written: a titled session (with ifUntitled), or none at all.
      if (options.ifUntitled && (await this.findById(sessionId)) !== undefined) return false;
      throw sessionNotFound(sessionId);
    });
  }

  /**
   * Adds usage atomically (no lost updates under concurrency). The first non-zero cost fixes the session's currency;
   * a zero cost (an unpriced model) is accepted in any currency, since it changes no money.
   *
   * @throws StoreError `currency_mismatch` when a non-zero cost comes in another currency than the session's,
   * `invalid_decimal` / `invalid_usage` for malformed input, `not_found` for an unknown session.
   */
  addUsage(sessionId: string, usage: TokenUsage & { cost: string; currency: string; status?: SessionStatus }): Promise<void> {
    return storeOperation('sessions.addUsage', async () => {
      const { db } = this.#ctx;
      const now = this.#ctx.now();
      const args = sessionWriteArgs(sessionId, now, 0, usage.status, usage);
      if (this.#ctx.costSql !== undefined) {
        // One guarded UPDATE, one round trip, row-locked, with exact decimal arithmetic in SQL.
        const shape = { status: usage.status !== undefined, usage: true, cost: args.cost !== '0' };
        const lastSeq = await this.#ctx.dialect.reserveSeqs(db, args, shape);
        if (lastSeq === undefined) await explainRefusedSessionWrite(db, sessionId, shape.cost ? usage.currency : undefined);
        return;
      }
      // A database that cannot sum decimals exactly (a SQLite opened elsewhere would add text as floats): the sum is
      // computed here, under the row lock (a single connection on SQLite) for read-modify-write.
      await atomically(db, async (trx) => {
        const row = await this.#ctx.dialect
          .lockForUpdate(trx.selectFrom('sessions').select(['cost', 'currency']).where('id', '=', sessionId))
          .executeTakeFirst();
        if (row === undefined) throw sessionNotFound(sessionId);
        if (args.cost !== '0' && row.currency !== usage.currency && !isZeroCost(row.cost)) throw currencyMismatch(sessionId, row.currency, usage.currency);
        await trx
          .updateTable('sessions')
          .set({
            input_tokens: sql`input_tokens + ${args.inputTokens}`,
            output_tokens: sql`output_tokens + ${args.outputTokens}`,
            cached_input_tokens: sql`cached_input_tokens + ${args.cachedInputTokens}`,
            cost: addCosts(row.cost, args.cost),
            currency: isZeroCost(row.cost) ? usage.currency : row.currency,
            ...(usage.status ? { status: usage.status } : {}),
            updated_at: now,
          })
          .where('id', '=', sessionId)
          .execute();
      });
    });
  }

  /** One guarded UPDATE: only a session not already so changes, so a pause keeps the time it began. */
  setPaused(sessionId: string, paused: boolean): Promise<boolean> {
    return storeOperation('sessions.setPaused', async () => {
      const now = this.#ctx.now();
      const result = await this.#ctx.db
        .updateTable('sessions')
        .set({ paused_at: paused ? now : null, updated_at: now })
        .where('id', '=', sessionId)
        .where('paused_at', paused ? 'is' : 'is not', null)
        .executeTakeFirst();
      if (result.numUpdatedRows !== 0n) return true;
      if ((await this.findById(sessionId)) === undefined) throw sessionNotFound(sessionId);
      return false;
    });
  }

  assign(
    sessionId: string,
    operator: string | null,
    options?: { readonly force?: boolean },
  ): Promise<{ readonly changed: boolean; readonly assignedTo: string | null }> {
    return storeOperation('sessions.assign', async () => {
      const now = this.#ctx.now();
      let update = this.#ctx.db
        .updateTable('sessions')
        .set({ assigned_to: operator, assigned_at: operator === null ? null : now, updated_at: now })
        .where('id', '=', sessionId);
      // Taking a conversation somebody else has is refused unless forced; taking back one's own changes nothing.
      if (options?.force !== true && operator !== null) update = update.where((eb) => eb.or([eb('assigned_to', 'is', null), eb('assigned_to', '=', operator)]));
      const result = await update
        .where((eb) => (operator === null ? eb('assigned_to', 'is not', null) : eb.or([eb('assigned_to', 'is', null), eb('assigned_to', '!=', operator)])))
        .executeTakeFirst();
      if (result.numUpdatedRows !== 0n) return { changed: true, assignedTo: operator };
      const session = await this.findById(sessionId);
      if (session === undefined) throw sessionNotFound(sessionId);
      return { changed: false, assignedTo: session.assignedTo };
    });
  }

  end(sessionId: string): Promise<Session> {
    return storeOperation('sessions.end', async () => {
      const now = this.#ctx.now();
      const row = await this.#ctx.dialect.writeReturning(
        this.#ctx.db,
        (db) =>
          db
            .updateTable('sessions')
            .set((eb) => ({ status: 'completed', ended_at: now, context_since_seq: eb.ref('last_seq'), updated_at: now }))
            .where('id', '=', sessionId)
            .returningAll(),
        (db) => db.selectFrom('sessions').selectAll().where('id', '=', sessionId).executeTakeFirst(),
      );
      if (row === undefined) throw sessionNotFound(sessionId);
      return toSession(row);
    });
  }

  async #find(channel: string, conversationId: string): Promise<Session | undefined> {
    const row = (await findByConversationQuery.execute(this.#ctx.db, { channel, conversationId })).rows[0];
    return row === undefined ? undefined : toSession(row);
  }
}

const findByIdQuery = prepared((db, $: { id: string }) => db.selectFrom('sessions').selectAll().where('id', '=', $.id));

const findByConversationQuery = prepared((db, $: { channel: string; conversationId: string }) =>
  db.selectFrom('sessions').selectAll().where('channel', '=', $.channel).where('conversation_id', '=', $.conversationId),
);

const setStatusQuery = prepared((db, $: { id: string; status: SessionStatus; now: number }) =>
  db.updateTable('sessions').set({ status: $.status, updated_at: $.now }).where('id', '=', $.id),
);

const setTitleQuery = prepared((db, $: { id: string; title: string; now: number }) =>
  db.updateTable('sessions').set({ title: $.title, updated_at: $.now }).where('id', '=', $.id),
);

const setFirstTitleQuery = prepared((db, $: { id: string; title: string; now: number }) =>
  db.updateTable('sessions').set({ title: $.title, updated_at: $.now }).where('id', '=', $.id).where('title', 'is', null),
);
