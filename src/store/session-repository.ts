import { sql, type RawBuilder } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Session, SessionStatus, TokenUsage } from '../domain/model.js';
import type { SessionRepository } from '../domain/ports/store.js';
import { addCosts, isZeroCost, toStoredCost } from './decimal.js';
import { prepared } from './prepared-query.js';
import { ADD_COST_FUNCTION, hasAddCostFunction } from './sqlite-database.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toSession } from './rows.js';
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
   * Adds usage atomically (no lost updates under concurrency). The first non-zero cost fixes the session's currency.
   *
   * @throws StoreError `currency_mismatch` when the session already holds a non-zero cost in another currency,
   * `invalid_decimal` / `invalid_usage` for malformed input, `not_found` for an unknown session.
   */
  addUsage(sessionId: string, usage: TokenUsage & { cost: string; currency: string; status?: SessionStatus }): Promise<void> {
    return storeOperation('sessions.addUsage', async () => {
      const args: UsageArgs = {
        id: sessionId,
        inputTokens: tokenCount(usage.inputTokens, 'inputTokens'),
        outputTokens: tokenCount(usage.outputTokens, 'outputTokens'),
        cost: toStoredCost(usage.cost),
        currency: usage.currency,
        status: usage.status ?? null,
        now: this.#ctx.now(),
      };
      const { db, dialect } = this.#ctx;
      // One guarded UPDATE, one round trip, row-locked: PostgreSQL's numeric arithmetic is exact, and on a SQLite
      // database opened by openSqliteDatabase the sum is done by its exact palaver_add_cost function.
      const guarded =
        dialect === 'postgres'
          ? usage.status ? addUsageWithStatusPostgres : addUsagePostgres
          : hasAddCostFunction(db)
            ? usage.status ? addUsageWithStatusSqlite : addUsageSqlite
            : undefined;
      if (guarded !== undefined) {
        const result = await guarded.execute(db, args);
        if (result.numAffectedRows === 0n) await this.#explainRefusedUsage(sessionId, usage.currency);
        return;
      }
      // Another SQLite database would add text as floats, so the sum is computed here; the transaction holds the
      // only connection, which makes read-modify-write safe within the process.
      await atomically(db, async (trx) => {
        const row = await trx.selectFrom('sessions').select(['cost', 'currency']).where('id', '=', sessionId).executeTakeFirst();
        if (row === undefined) throw notFound(sessionId);
        if (row.currency !== usage.currency && !isZeroCost(row.cost)) throw currencyMismatch(sessionId, row.currency, usage.currency);
        await trx
          .updateTable('sessions')
          .set({
            input_tokens: sql`input_tokens + ${args.inputTokens}`,
            output_tokens: sql`output_tokens + ${args.outputTokens}`,
            cost: addCosts(row.cost, args.cost),
            currency: isZeroCost(row.cost) ? usage.currency : row.currency,
            ...(usage.status ? { status: usage.status } : {}),
            updated_at: args.now,
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

  async #explainRefusedUsage(sessionId: string, currency: string): Promise<never> {
    const row = await this.#ctx.db.selectFrom('sessions').select('currency').where('id', '=', sessionId).executeTakeFirst();
    if (row === undefined) throw notFound(sessionId);
    throw currencyMismatch(sessionId, row.currency, currency);
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

interface UsageArgs {
  readonly id: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Canonical decimal text. */
  readonly cost: string;
  readonly currency: string;
  readonly status: SessionStatus | null;
  readonly now: number;
}

/**
 * The guarded usage UPDATE: adds tokens and cost, and takes the offered currency while the total is still zero;
 * changes nothing (0 rows) when the session holds a non-zero cost in another currency. `addCost` is the exact sum.
 */
function addUsageQuery(addCost: (cost: string) => RawBuilder<string>, isZero: RawBuilder<boolean>, withStatus: boolean) {
  return prepared((db, $: UsageArgs) =>
    db
      .updateTable('sessions')
      .set({
        input_tokens: sql`input_tokens + ${$.inputTokens}`,
        output_tokens: sql`output_tokens + ${$.outputTokens}`,
        cost: addCost($.cost),
        currency: sql`case when ${isZero} then ${$.currency} else currency end`,
        updated_at: $.now,
      })
      .$if(withStatus, (qb) => qb.set({ status: $.status as SessionStatus }))
      .where('id', '=', $.id)
      .where((eb) => eb.or([eb('currency', '=', $.currency), isZero])),
  );
}

const postgresAddCost = (cost: string) => sql<string>`cost + cast(${cost} as numeric)`;
const addUsagePostgres = addUsageQuery(postgresAddCost, sql<boolean>`cost = 0`, false);
const addUsageWithStatusPostgres = addUsageQuery(postgresAddCost, sql<boolean>`cost = 0`, true);
// Costs are canonical text on SQLite, so zero is exactly '0'.
const sqliteAddCost = (cost: string) => sql<string>`${sql.raw(ADD_COST_FUNCTION)}(cost, ${cost})`;
const addUsageSqlite = addUsageQuery(sqliteAddCost, sql<boolean>`cost = '0'`, false);
const addUsageWithStatusSqlite = addUsageQuery(sqliteAddCost, sql<boolean>`cost = '0'`, true);

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
