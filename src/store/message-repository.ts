import { sql, type Insertable, type Kysely } from 'kysely';
import { StoreError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Audience, NewMessage, StoredMessage } from '../domain/model.js';
import type { MessageRepository } from '../domain/ports/store.js';
import { toStoredCost } from './decimal.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toMessage } from './rows.js';
import type { Database, MessagesTable } from './schema.js';
import { classifyDriverError, storeOperation } from './store-errors.js';

/** Currency recorded on a message that names none (its cost is then "0" unless given). */
export const DEFAULT_CURRENCY = 'USD';

// Rows per INSERT: 17 parameters each stays far below SQLite's 32766 and PostgreSQL's 65535 bound parameters.
const ROWS_PER_INSERT = 500;

type PreparedRow = Omit<Insertable<MessagesTable>, 'seq'> & { readonly message: StoredMessage };

/** The conversation history of sessions, ordered by a per-session `seq`. */
export class KyselyMessageRepository implements MessageRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /**
   * Appends in one atomic step. Seqs come from the session's `last_seq` counter, bumped under the session row lock,
   * so concurrent appends to one session get distinct, gap-free ranges and seqs are never reused, not even after
   * {@link clear}.
   *
   * @throws StoreError `not_found` for an unknown session, `invalid_decimal` for a malformed cost.
   */
  append(sessionId: string, messages: readonly NewMessage[]): Promise<StoredMessage[]> {
    return storeOperation('messages.append', async () => {
      if (messages.length === 0) return [];
      const now = this.#ctx.now();
      const rows = messages.map((message) => prepare(sessionId, message, now));
      try {
        const seqs =
          this.#ctx.dialect === 'postgres' && rows.length <= ROWS_PER_INSERT
            ? await appendInOneStatement(this.#ctx.db, sessionId, rows, now)
            : await appendInTransaction(this.#ctx.db, sessionId, rows, now);
        return rows.map((row, index) => ({ ...row.message, seq: seqs[index] ?? Number.NaN }));
      } catch (error) {
        // On PostgreSQL an unknown session leaves the CTE empty and `seq` null.
        if (classifyDriverError(error) === 'not_null' || classifyDriverError(error) === 'foreign_key') throw notFound(sessionId, error);
        throw error;
      }
    });
  }

  /** Up to `limit` latest messages, oldest first; a non-positive limit returns none. */
  listRecent(sessionId: string, options: { limit: number; audience?: Audience }): Promise<StoredMessage[]> {
    return storeOperation('messages.listRecent', async () => {
      const limit = Math.trunc(options.limit);
      if (!(limit > 0)) return [];
      const rows = await this.#ctx.db
        .selectFrom('messages')
        .selectAll()
        .where('session_id', '=', sessionId)
        .$if(options.audience !== undefined, (qb) => qb.where('audience', '=', options.audience as Audience))
        .orderBy('seq', 'desc')
        .limit(limit)
        .execute();
      return rows.reverse().map(toMessage);
    });
  }

  clear(sessionId: string): Promise<number> {
    return storeOperation('messages.clear', async () => {
      const result = await this.#ctx.db.deleteFrom('messages').where('session_id', '=', sessionId).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}

/**
 * PostgreSQL: the counter bump and the insert as one statement — one round trip, atomic without a transaction.
 * The UPDATE in the CTE takes the session row lock, so a concurrent append waits and then sees the new `last_seq`.
 */
async function appendInOneStatement(db: Kysely<Database>, sessionId: string, rows: readonly PreparedRow[], now: number): Promise<number[]> {
  const count = rows.length;
  const inserted = await db
    .with('s', (qb) =>
      qb.updateTable('sessions').set({ last_seq: sql`last_seq + ${count}`, updated_at: now }).where('id', '=', sessionId).returning('last_seq'),
    )
    .insertInto('messages')
    .values(rows.map(({ message: _message, ...row }, index) => ({ ...row, seq: sql<number>`(select last_seq from s) - ${count - 1 - index}` })))
    .returning(['id', 'seq'])
    .execute();
  const seqById = new Map(inserted.map((row) => [row.id, Number(row.seq)]));
  return rows.map((row) => seqById.get(row.id as string) ?? Number.NaN);
}

/** Any dialect: bump the counter, then insert with explicit seqs, in one (possibly the caller's) transaction. */
async function appendInTransaction(db: Kysely<Database>, sessionId: string, rows: readonly PreparedRow[], now: number): Promise<number[]> {
  return atomically(db, async (trx) => {
    const bumped = await trx
      .updateTable('sessions')
      .set({ last_seq: sql`last_seq + ${rows.length}`, updated_at: now })
      .where('id', '=', sessionId)
      .returning('last_seq')
      .executeTakeFirst();
    if (bumped === undefined) throw notFound(sessionId);
    const first = Number(bumped.last_seq) - rows.length + 1;
    const seqs = rows.map((_, index) => first + index);
    for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
      const chunk = rows.slice(start, start + ROWS_PER_INSERT);
      await trx
        .insertInto('messages')
        .values(chunk.map(({ message: _message, ...row }, index) => ({ ...row, seq: first + start + index })))
        .execute();
    }
    return seqs;
  });
}

function prepare(sessionId: string, message: NewMessage, now: number): PreparedRow {
  const stored: StoredMessage = {
    id: newId(),
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
    cost: toStoredCost(message.cost ?? '0'),
    currency: message.currency ?? DEFAULT_CURRENCY,
    correlationId: message.correlationId ?? null,
    meta: message.meta ?? null,
    createdAt: new Date(now),
  };
  return {
    message: stored,
    id: stored.id,
    session_id: sessionId,
    role: stored.role,
    audience: stored.audience,
    content: stored.content,
    tool_calls: stored.toolCalls === null ? null : JSON.stringify(stored.toolCalls),
    tool_call_id: stored.toolCallId,
    model: stored.model,
    input_tokens: stored.inputTokens,
    output_tokens: stored.outputTokens,
    cost: stored.cost,
    currency: stored.currency,
    correlation_id: stored.correlationId,
    meta: stored.meta === null ? null : JSON.stringify(stored.meta),
    created_at: now,
  };
}

function notFound(sessionId: string, cause?: unknown): StoreError {
  return new StoreError('not_found', `Cannot append to session ${sessionId}: it does not exist; open it first.`, { cause });
}
