import { sql, type Kysely, type QueryCreator, type RawBuilder } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Session, SessionStatus, TokenUsage } from '../domain/model.js';
import type { SessionRepository } from '../domain/ports/store.js';
import { addCosts, isZeroCost, toStoredCost } from './decimal.js';
import { prepared, type PreparedQuery } from './prepared-query.js';
import { ADD_COST_FUNCTION, hasAddCostFunction } from './sqlite-database.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toSession } from './rows.js';
import type { Database } from './schema.js';
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
      const created = await db
        .insertInto('sessions')
        .values({ id: newId(), user_id: input.userId, channel: input.channel, conversation_id: input.conversationId, created_at: now, updated_at: now })
        .onConflict((oc) => oc.columns(['channel', 'conversation_id']).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (created !== undefined) return toSession(created);
      // Opened concurrently by someone else between our read and our insert.
      const raced = await this.#find(input.channel, input.conversationId);
      if (raced === undefined) throw new StoreError('query_failed', `Session ${input.channel}/${input.conversationId} vanished while it was being opened; retry.`);
      return raced;
    });
  }

  findById(sessionId: string): Promise<Session | undefined> {
    return storeOperation('sessions.findById', async () => {
      const row = await this.#ctx.db.selectFrom('sessions').selectAll().where('id', '=', sessionId).executeTakeFirst();
      return row === undefined ? undefined : toSession(row);
    });
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
      if (result.numAffectedRows === 0n) throw notFound(sessionId);
    });
  }

  /** @throws StoreError `not_found` for an unknown session. */
  setTitle(sessionId: string, title: string): Promise<void> {
    return storeOperation('sessions.setTitle', async () => {
      const result = await setTitleQuery.execute(this.#ctx.db, { id: sessionId, title, now: this.#ctx.now() });
      if (result.numAffectedRows === 0n) throw notFound(sessionId);
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
      const arithmetic = costArithmeticOf(this.#ctx);
      if (arithmetic !== undefined) {
        // One guarded UPDATE, one round trip, row-locked, with exact decimal arithmetic in SQL.
        const args = { ...sessionWriteArgs(sessionId, now, 0, usage), status: usage.status ?? 'pending' };
        const shape = { status: usage.status !== undefined, usage: arithmetic, cost: args.cost !== '0' };
        const { rows } = await sessionWriteQuery(shape).execute(db, args);
        if (rows[0] === undefined) await explainRefusedSessionWrite(db, sessionId, shape.cost ? usage.currency : undefined);
        return;
      }
      // Another SQLite database would add text as floats, so the sum is computed here; the transaction holds the
      // only connection, which makes read-modify-write safe within the process.
      const args = sessionWriteArgs(sessionId, now, 0, usage);
      await atomically(db, async (trx) => {
        const row = await trx.selectFrom('sessions').select(['cost', 'currency']).where('id', '=', sessionId).executeTakeFirst();
        if (row === undefined) throw notFound(sessionId);
        if (args.cost !== '0' && row.currency !== usage.currency && !isZeroCost(row.cost)) throw currencyMismatch(sessionId, row.currency, usage.currency);
        await trx
          .updateTable('sessions')
          .set({
            input_tokens: sql`input_tokens + ${args.inputTokens}`,
            output_tokens: sql`output_tokens + ${args.outputTokens}`,
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

  async #find(channel: string, conversationId: string): Promise<Session | undefined> {
    const row = (await findByConversationQuery.execute(this.#ctx.db, { channel, conversationId })).rows[0];
    return row === undefined ? undefined : toSession(row);
  }
}

const findByConversationQuery = prepared((db, $: { channel: string; conversationId: string }) =>
  db.selectFrom('sessions').selectAll().where('channel', '=', $.channel).where('conversation_id', '=', $.conversationId),
);

const setStatusQuery = prepared((db, $: { id: string; status: SessionStatus; now: number }) =>
  db.updateTable('sessions').set({ status: $.status, updated_at: $.now }).where('id', '=', $.id),
);

const setTitleQuery = prepared((db, $: { id: string; title: string; now: number }) =>
  db.updateTable('sessions').set({ title: $.title, updated_at: $.now }).where('id', '=', $.id),
);

/** Exact cost sums in SQL: PostgreSQL's numeric, or {@link ADD_COST_FUNCTION} on a SQLite database opened here. */
export type CostArithmetic = 'postgres' | 'sqlite';

/** The arithmetic `ctx`'s database offers, or undefined when the sum must be computed in JavaScript. */
export function costArithmeticOf(ctx: RepositoryContext): CostArithmetic | undefined {
  return ctx.dialect === 'postgres' ? 'postgres' : hasAddCostFunction(ctx.db) ? 'sqlite' : undefined;
}

/** What a write to a session row sets besides `updated_at`: the same for every write of one shape. */
export interface SessionWriteShape {
  /** Sets `status`. */
  readonly status: boolean;
  /** Adds usage (tokens, and cost when `cost`) with this arithmetic; undefined: no usage. */
  readonly usage: CostArithmetic | undefined;
  /**
   * Adds a non-zero cost, under the currency rule. A zero cost (an unpriced model) changes no money, so it is
   * neither summed nor refused for its currency.
   */
  readonly cost: boolean;
}

/** The values of a session write (fields a shape does not use are ignored). */
export interface SessionWriteArgs {
  readonly id: string;
  readonly now: number;
  /** Seqs handed out: `last_seq` grows by this much (0 for none). */
  readonly count: number;
  readonly status: SessionStatus;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Canonical decimal text. */
  readonly cost: string;
  readonly currency: string;
}

/** Validated usage values for {@link SessionWriteArgs}; no usage counts as zero. */
export function sessionWriteArgs(id: string, now: number, count: number, usage?: TokenUsage & { cost: string; currency: string }): Omit<SessionWriteArgs, 'status'> {
  return {
    id,
    now,
    count,
    inputTokens: tokenCount(usage?.inputTokens ?? 0, 'inputTokens'),
    outputTokens: tokenCount(usage?.outputTokens ?? 0, 'outputTokens'),
    cost: usage === undefined ? '0' : toStoredCost(usage.cost),
    currency: usage?.currency ?? 'USD',
  };
}

const ARITHMETIC: Record<CostArithmetic, { add: (cost: string) => RawBuilder<string>; isZero: RawBuilder<boolean> }> = {
  postgres: { add: (cost) => sql<string>`cost + cast(${cost} as numeric)`, isZero: sql<boolean>`cost = 0` },
  // Costs are canonical text on SQLite, so zero is exactly '0'.
  sqlite: { add: (cost) => sql<string>`${sql.raw(ADD_COST_FUNCTION)}(cost, ${cost})`, isZero: sql<boolean>`cost = '0'` },
};

/**
 * The one UPDATE of a session row: hands out `count` seqs, and per `shape` sets the status and adds usage. With
 * usage it takes the offered currency while the total is still zero, and changes nothing (no row returned) when the
 * session holds a non-zero cost in another currency. Returns the new `last_seq`.
 */
export function sessionWrite(db: QueryCreator<Database>, $: SessionWriteArgs, shape: SessionWriteShape) {
  let update = db.updateTable('sessions').set({ last_seq: sql`last_seq + ${$.count}`, updated_at: $.now });
  if (shape.status) update = update.set({ status: $.status });
  if (shape.usage !== undefined) {
    const { add, isZero } = ARITHMETIC[shape.usage];
    update = update.set({
      input_tokens: sql`input_tokens + ${$.inputTokens}`,
      output_tokens: sql`output_tokens + ${$.outputTokens}`,
      currency: sql`case when ${isZero} then ${$.currency} else currency end`,
    });
    if (shape.cost) update = update.set({ cost: add($.cost) }).where((eb) => eb.or([eb('currency', '=', $.currency), isZero]));
  }
  return update.where('id', '=', $.id).returning('last_seq');
}

/** A small integer per shape (status: 1 bit, usage: 2 bits, cost: 1 bit), for caches of per-shape queries. */
export function shapeIndex(shape: SessionWriteShape): number {
  return (shape.status ? 1 : 0) + (shape.usage === undefined ? 0 : shape.usage === 'postgres' ? 2 : 4) + (shape.cost ? 8 : 0);
}

const sessionWriteQueries: PreparedQuery<SessionWriteArgs, { last_seq: number }>[] = [];

/** {@link sessionWrite} as a prepared query, one per shape. */
export function sessionWriteQuery(shape: SessionWriteShape): PreparedQuery<SessionWriteArgs, { last_seq: number }> {
  return (sessionWriteQueries[shapeIndex(shape)] ??= prepared((db, $: SessionWriteArgs) => sessionWrite(db, $, shape)));
}

/**
 * Says why a session write changed no row: the session does not exist, or (with `currency`) it is billed in
 * another currency.
 */
export async function explainRefusedSessionWrite(db: Kysely<Database>, sessionId: string, currency?: string): Promise<never> {
  const row = await db.selectFrom('sessions').select('currency').where('id', '=', sessionId).executeTakeFirst();
  if (row === undefined || currency === undefined) throw notFound(sessionId);
  throw currencyMismatch(sessionId, row.currency, currency);
}

function tokenCount(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StoreError('invalid_usage', `${field} must be a non-negative integer, got ${value}.`);
  }
  return value;
}

function notFound(sessionId: string): StoreError {
  return new StoreError('not_found', `Session ${sessionId} does not exist; open it first.`);
}

function currencyMismatch(sessionId: string, held: string, offered: string): StoreError {
  return new StoreError(
    'currency_mismatch',
    `Session ${sessionId} is billed in ${held}; convert the ${offered} cost to ${held} before adding it.`,
  );
}
