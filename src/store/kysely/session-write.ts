import { sql, type Kysely, type QueryCreator } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { SessionStatus, TokenUsage } from '../../domain/model.js';
import { toStoredCost } from '../../domain/money.js';
import type { CostSql } from './dialect-strategy.js';
import { prepared, type PreparedQuery } from './prepared-query.js';
import type { Database } from './schema.js';

// The one write of a session row that every change of a turn goes through: seqs for new messages, status, usage.

/** What a write to a session row sets besides `updated_at`: the same for every write of one shape. */
export interface SessionWriteShape {
  /** Sets `status`. */
  readonly status: boolean;
  /** Adds usage (tokens, and cost when `cost`) with the database's exact cost arithmetic in SQL. */
  readonly usage: boolean;
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
  readonly cachedInputTokens: number;
  /** Canonical decimal text. */
  readonly cost: string;
  readonly currency: string;
}

/** Validated values for {@link SessionWriteArgs}; no usage counts as zero. */
export function sessionWriteArgs(
  id: string,
  now: number,
  count: number,
  status: SessionStatus | undefined,
  usage?: TokenUsage & { readonly cost: string; readonly currency: string },
): SessionWriteArgs {
  return {
    id,
    now,
    count,
    status: status ?? 'pending',
    inputTokens: usage === undefined ? 0 : tokenCount(usage.inputTokens, 'inputTokens'),
    outputTokens: usage === undefined ? 0 : tokenCount(usage.outputTokens, 'outputTokens'),
    cachedInputTokens: usage?.cachedInputTokens === undefined ? 0 : cachedTokenCount(usage),
    cost: usage === undefined || usage.cost === '0' ? '0' : toStoredCost(usage.cost),
    currency: usage?.currency ?? 'USD',
  };
}

/**
 * The one UPDATE of a session row: hands out `count` seqs, and per `shape` sets the status and adds usage (with
 * `costSql`, required then). With usage it takes the offered currency while the total is still zero, and changes
 * nothing (matches no row) when the session holds a non-zero cost in another currency. Add `.returning('last_seq')`
 * for the new `last_seq` where the dialect returns rows from an UPDATE.
 */
export function sessionWrite(db: QueryCreator<Database>, $: SessionWriteArgs, shape: SessionWriteShape, costSql: CostSql | undefined) {
  let update = db.updateTable('sessions').set({ last_seq: sql`last_seq + ${$.count}`, updated_at: $.now });
  if (shape.status) update = update.set({ status: $.status });
  if (shape.usage) {
    if (costSql === undefined) throw new Error('A session write with usage needs cost arithmetic in SQL.');
    const { add, isZero } = costSql;
    update = update.set({
      input_tokens: sql`input_tokens + ${$.inputTokens}`,
      output_tokens: sql`output_tokens + ${$.outputTokens}`,
      cached_input_tokens: sql`cached_input_tokens + ${$.cachedInputTokens}`,
      currency: sql`case when ${isZero} then ${$.currency} else currency end`,
    });
    if (shape.cost) update = update.set({ cost: add($.cost) }).where((eb) => eb.or([eb('currency', '=', $.currency), isZero]));
  }
  return update.where('id', '=', $.id);
}

/** A small integer per shape, for caches of per-shape queries. */
export function shapeIndex(shape: SessionWriteShape): number {
  return (shape.status ? 1 : 0) + (shape.usage ? 2 : 0) + (shape.cost ? 4 : 0);
}

const sessionWriteQueries: PreparedQuery<SessionWriteArgs, { last_seq: number }>[] = [];

/**
 * {@link sessionWrite} with `RETURNING last_seq` as a prepared query, one per shape, with the cost arithmetic of the
 * database it runs on (for dialects with UPDATE … RETURNING).
 */
export function sessionWriteQuery(shape: SessionWriteShape): PreparedQuery<SessionWriteArgs, { last_seq: number }> {
  return (sessionWriteQueries[shapeIndex(shape)] ??= prepared((db, $: SessionWriteArgs, dialect) =>
    sessionWrite(db, $, shape, shape.usage ? dialect.costSql(db) : undefined).returning('last_seq'),
  ));
}

/**
 * Says why a session write changed no row: the session does not exist, or (with `currency`) it is billed in
 * another currency.
 */
export async function explainRefusedSessionWrite(db: Kysely<Database>, sessionId: string, currency?: string): Promise<never> {
  const row = await db.selectFrom('sessions').select('currency').where('id', '=', sessionId).executeTakeFirst();
  if (row === undefined || currency === undefined) throw sessionNotFound(sessionId);
  throw currencyMismatch(sessionId, row.currency, currency);
}

/** Cached input tokens are part of the input: never more than it. */
export function cachedTokenCount(usage: TokenUsage): number {
  const cached = tokenCount(usage.cachedInputTokens ?? 0, 'cachedInputTokens');
  if (cached > usage.inputTokens) throw new StoreError('invalid_usage', `cachedInputTokens (${cached}) cannot exceed inputTokens (${usage.inputTokens}): cached tokens are counted within the input.`);
  return cached;
}

function tokenCount(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StoreError('invalid_usage', `${field} must be a non-negative integer, got ${value}.`);
  }
  return value;
}

export function sessionNotFound(sessionId: string): StoreError {
  return new StoreError('not_found', `Session ${sessionId} does not exist; open it first.`);
}

export function currencyMismatch(sessionId: string, held: string, offered: string): StoreError {
  return new StoreError(
    'currency_mismatch',
    `Session ${sessionId} is billed in ${held}; convert the ${offered} cost to ${held} before adding it.`,
  );
}
