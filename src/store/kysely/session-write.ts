import { sql, type Kysely, type QueryCreator } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { CostSql } from './dialect-strategy.js';
import { prepared, type PreparedQuery } from './prepared-query.js';
import type { Database } from './schema.js';
import type { SessionWriteArgs, SessionWriteShape } from './session-write-args.js';

// The one write of a session row that every change of a turn goes through: seqs for new messages, status, usage.

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

export function sessionNotFound(sessionId: string): StoreError {
  return new StoreError('not_found', `Session ${sessionId} does not exist; open it first.`);
}

export function currencyMismatch(sessionId: string, held: string, offered: string): StoreError {
  return new StoreError('currency_mismatch', `Session ${sessionId} is billed in ${held}; convert the ${offered} cost to ${held} before adding it.`);
}
