import { sql, type Kysely } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { Audience, NewMessage, StoredMessage } from '../../domain/model.js';
import { fromStoredCost, isZeroCost, toStoredCost } from '../../domain/money.js';
import { estimateTokens } from '../../domain/token-estimate.js';
import type { MessageRepository, SessionChange } from '../../domain/ports/store.js';
import { strategyOf, type DialectStrategy } from './dialect-strategy.js';
import { prepared, preparedBatch } from './prepared-query.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { columnsOf, PREPARED_MAX_ROWS, ROWS_PER_INSERT } from './message-rows.js';
import { toMessage } from './rows.js';
import type { Database, MessageValues } from './schema.js';
import { KyselySessionRepository } from './session-repository.js';
import { currencyMismatch, explainRefusedSessionWrite, sessionNotFound } from './session-write.js';
import { sessionWriteArgs, type SessionWriteArgs, type SessionWriteShape } from './session-write-args.js';
import { classifyDriverError, storeOperation } from './store-errors.js';

/** Currency recorded on a message that names none (its cost is then "0" unless given). */
export const DEFAULT_CURRENCY = 'USD';

/** A message on its way in: the row to insert (its `seq` set once known) and the record to return. */
interface PreparedRow {
  readonly values: MessageValues;
  readonly message: { -readonly [K in keyof StoredMessage]: StoredMessage[K] };
}

/** The conversation history of sessions, ordered by a per-session `seq`. */
export class KyselyMessageRepository implements MessageRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /**
   * Appends in one atomic step, with the session's changes in the same UPDATE of its row. Seqs come from the
   * session's `last_seq` counter, bumped under the session row lock, so concurrent appends to one session get
   * distinct, gap-free ranges and seqs are never reused, not even after {@link clear}.
   *
   * @throws StoreError `not_found` for an unknown session, `invalid_decimal` for a malformed cost, `invalid_usage`
   * and `currency_mismatch` as `sessions.addUsage` throws them.
   */
  append(sessionId: string, messages: readonly NewMessage[], change: SessionChange = {}): Promise<StoredMessage[]> {
    return storeOperation('messages.append', async () => {
      if (messages.length === 0 && change.status === undefined && change.usage === undefined) return [];
      const { db, dialect, costSql } = this.#ctx;
      const now = this.#ctx.now();
      const rows = messages.map((message) => prepare(sessionId, message, now));
      // Money of this append (messages' costs and the usage) is in one currency, the session's: the write is guarded by it.
      const billed = billedCurrency(sessionId, rows, change.usage);
      const guard = billed !== undefined && (change.usage === undefined || change.usage.cost === '0' || isZeroCost(change.usage.cost));
      const usage = guard ? { inputTokens: 0, outputTokens: 0, ...change.usage, cost: '0', currency: billed } : change.usage;
      // Usage is added in the same UPDATE where SQL can sum costs exactly; elsewhere by sessions.addUsage after it.
      const usageInline = usage !== undefined && costSql !== undefined;
      const args = sessionWriteArgs(sessionId, now, rows.length, change.status, usageInline ? usage : undefined);
      const shape: SessionWriteShape = { status: change.status !== undefined, usage: usageInline, cost: usageInline && (args.cost !== '0' || guard) };
      try {
        const values = rows.map((row) => row.values);
        const inOneStatement =
          dialect.appendInOneStatement !== undefined && (usage === undefined || usageInline) && (await dialect.appendInOneStatement(db, args, shape, values));
        if (!inOneStatement) {
          await atomically(db, async (trx) => {
            if (guard && !usageInline) await refuseOtherCurrency(trx, sessionId, billed);
            await appendInTransaction(trx, dialect, args, shape, values);
            if (change.usage !== undefined && !usageInline) await new KyselySessionRepository({ ...this.#ctx, db: trx }).addUsage(sessionId, change.usage);
          });
        }
        for (const row of rows) row.message.seq = row.values.seq;
        return rows.map((row) => row.message);
      } catch (error) {
        // On PostgreSQL a refused session write leaves the CTE empty and `seq` null.
        const kind = classifyDriverError(error);
        if (kind === 'not_null' || kind === 'foreign_key') await explainRefusedSessionWrite(db, sessionId, shape.cost ? args.currency : undefined);
        throw error;
      }
    });
  }

  listBetween(
    sessionId: string,
    range: { readonly afterSeq: number; readonly beforeSeq: number | null; readonly audience: Audience; readonly limit: number },
  ): Promise<StoredMessage[]> {
    return storeOperation('messages.listBetween', async () => {
      const limit = Math.trunc(range.limit);
      if (!(limit > 0)) return [];
      let select = this.#ctx.db
        .selectFrom('messages')
        .selectAll()
        .where('session_id', '=', sessionId)
        .where('audience', '=', range.audience)
        .where('seq', '>', range.afterSeq);
      if (range.beforeSeq !== null) select = select.where('seq', '<', range.beforeSeq);
      const rows = await select.orderBy('seq').limit(limit).execute();
      return rows.map(toMessage);
    });
  }

  /** One message by its place in the session. */
  findBySeq(sessionId: string, seq: number): Promise<StoredMessage | undefined> {
    return storeOperation('messages.findBySeq', async () => {
      const row = await this.#ctx.db.selectFrom('messages').selectAll().where('session_id', '=', sessionId).where('seq', '=', seq).executeTakeFirst();
      return row === undefined ? undefined : toMessage(row);
    });
  }

  /**
   * Up to `limit` latest messages, oldest first; a non-positive limit returns none. Every variant walks the
   * (session_id, seq) key backwards and stops after `limit` matches (passing only the audit rows between them), so
   * its cost does not grow with the session's length; the query plans are checked on both dialects.
   */
  listRecent(sessionId: string, options: { limit: number; audience?: Audience; sinceContextStart?: boolean }): Promise<StoredMessage[]> {
    return storeOperation('messages.listRecent', async () => {
      const limit = Math.trunc(options.limit);
      if (!(limit > 0)) return [];
      const { audience } = options;
      const { rows } =
        audience === undefined
          ? await listRecentQuery.execute(this.#ctx.db, { sessionId, limit })
          : options.sinceContextStart
            ? await listContextOfAudienceQuery.execute(this.#ctx.db, { sessionId, audience, limit })
            : await listRecentOfAudienceQuery.execute(this.#ctx.db, { sessionId, audience, limit });
      // Newest first from the index; the caller wants them oldest first.
      const messages = new Array<StoredMessage>(rows.length);
      for (let index = 0; index < rows.length; index += 1) messages[rows.length - 1 - index] = toMessage(rows[index]!);
      return messages;
    });
  }

  markNotSent(sessionId: string, ids: readonly string[], reason: string): Promise<void> {
    return storeOperation('messages.markNotSent', async () => {
      if (ids.length === 0) return;
      // Read, merge and write back: meta is JSON text on both dialects, and these are a turn's few messages.
      await atomically(this.#ctx.db, async (db) => {
        const rows = await db
          .selectFrom('messages')
          .select(['id', 'meta'])
          .where('session_id', '=', sessionId)
          .where('id', 'in', [...ids])
          .execute();
        for (const row of rows) {
          const meta = row.meta === null ? {} : (JSON.parse(row.meta) as Record<string, unknown>);
          await db
            .updateTable('messages')
            .set({ meta: JSON.stringify({ ...meta, notSent: reason }) })
            .where('id', '=', row.id)
            .execute();
        }
      });
    });
  }

  clear(sessionId: string): Promise<number> {
    return storeOperation('messages.clear', async () => {
      const result = await this.#ctx.db.deleteFrom('messages').where('session_id', '=', sessionId).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

const listRecentQuery = prepared((db, $: { sessionId: string; limit: number }) =>
  db.selectFrom('messages').selectAll().where('session_id', '=', $.sessionId).orderBy('seq', 'desc').limit($.limit),
);

const listRecentOfAudienceQuery = prepared((db, $: { sessionId: string; audience: Audience; limit: number }) =>
  db.selectFrom('messages').selectAll().where('session_id', '=', $.sessionId).where('audience', '=', $.audience).orderBy('seq', 'desc').limit($.limit),
);

// After the session's last reset only (what the model may see).
const listContextOfAudienceQuery = prepared((db, $: { sessionId: string; audience: Audience; limit: number }) =>
  db
    .selectFrom('messages')
    .selectAll()
    .where('session_id', '=', $.sessionId)
    .where('audience', '=', $.audience)
    .where('seq', '>', sql<number>`(select context_since_seq from sessions where id = ${$.sessionId})`)
    .orderBy('seq', 'desc')
    .limit($.limit),
);

const insertMessagesQuery = preparedBatch(
  (db, _$: object, rows: readonly MessageValues[]) => db.insertInto('messages').values(rows.map((row) => columnsOf(row))),
  {
    maxRows: PREPARED_MAX_ROWS,
  },
);

/** Any dialect: the session write, then the insert with explicit seqs, inside the caller's transaction. */
async function appendInTransaction(
  trx: Kysely<Database>,
  dialect: DialectStrategy,
  args: SessionWriteArgs,
  shape: SessionWriteShape,
  values: readonly MessageValues[],
): Promise<void> {
  const lastSeq = await dialect.reserveSeqs(trx, args, shape);
  if (lastSeq === undefined) return explainRefusedSessionWrite(trx, args.id, shape.cost ? args.currency : undefined);
  const first = lastSeq - values.length + 1;
  for (let index = 0; index < values.length; index += 1) values[index]!.seq = first + index;
  for (let start = 0; start < values.length; start += ROWS_PER_INSERT) {
    await insertMessagesQuery.execute(trx, {}, values.length <= ROWS_PER_INSERT ? values : values.slice(start, start + ROWS_PER_INSERT));
  }
}

/**
 * The one currency the money of an append is in: that of its messages with a cost and of its usage's cost, or
 * undefined when none carries money.
 * @throws StoreError `currency_mismatch` when they name two currencies.
 */
function billedCurrency(sessionId: string, rows: readonly PreparedRow[], usage: SessionChange['usage']): string | undefined {
  let currency = usage !== undefined && usage.cost !== '0' && !isZeroCost(toStoredCost(usage.cost)) ? usage.currency : undefined;
  for (const { message } of rows) {
    if (message.cost === '0') continue;
    if (currency !== undefined && message.currency !== currency) throw currencyMismatch(sessionId, currency, message.currency);
    currency = message.currency;
  }
  return currency;
}

/** Where SQL cannot guard the session write: refuses money in another currency than the session's, read under the lock. */
async function refuseOtherCurrency(trx: Kysely<Database>, sessionId: string, currency: string): Promise<void> {
  const row = await strategyOf(trx)
    .lockForUpdate(trx.selectFrom('sessions').select(['cost', 'currency']).where('id', '=', sessionId))
    .executeTakeFirst();
  if (row === undefined) throw sessionNotFound(sessionId);
  if (row.currency !== currency && !isZeroCost(fromStoredCost(row.cost))) throw currencyMismatch(sessionId, row.currency, currency);
}

function prepare(sessionId: string, message: NewMessage, now: number): PreparedRow {
  const toolCalls = message.toolCalls === undefined || message.toolCalls === null ? null : JSON.stringify(message.toolCalls);
  const stored: PreparedRow['message'] = {
    id: message.id ?? newId(),
    sessionId,
    seq: 0,
    role: message.role,
    audience: message.audience,
    content: message.content,
    toolCalls: message.toolCalls ?? null,
    toolCallId: message.toolCallId ?? null,
    model: message.model ?? null,
    inputTokens: message.inputTokens ?? 0,
    outputTokens: message.outputTokens ?? 0,
    cachedInputTokens: message.cachedInputTokens ?? 0,
    tokenEstimate: estimateTokens(message.content, toolCalls),
    cost: message.cost === undefined || message.cost === '0' ? '0' : toStoredCost(message.cost),
    currency: message.currency ?? DEFAULT_CURRENCY,
    correlationId: message.correlationId ?? null,
    meta: message.meta ?? null,
    createdAt: new Date(now),
  };
  return {
    message: stored,
    values: {
      id: stored.id,
      session_id: sessionId,
      seq: 0,
      role: stored.role,
      audience: stored.audience,
      content: stored.content,
      tool_calls: toolCalls,
      tool_call_id: stored.toolCallId,
      model: stored.model,
      input_tokens: stored.inputTokens,
      output_tokens: stored.outputTokens,
      cached_input_tokens: stored.cachedInputTokens,
      token_estimate: stored.tokenEstimate,
      cost: stored.cost,
      currency: stored.currency,
      correlation_id: stored.correlationId,
      meta: stored.meta === null ? null : JSON.stringify(stored.meta),
      created_at: now,
    },
  };
}
