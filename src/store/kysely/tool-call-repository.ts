import type { Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import type { ToolCallRecord } from '../../domain/model.js';
import type { ToolCallRepository } from '../../domain/ports/store.js';
import type { DialectStrategy } from './dialect-strategy.js';
import { prepared } from './prepared-query.js';
import type { RepositoryContext } from './repository-context.js';
import { toToolCall } from './rows.js';
import type { Database } from './schema.js';
import { storeOperation } from './store-errors.js';

/** The idempotency records of tool calls. */
export class KyselyToolCallRepository implements ToolCallRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /** Inserts the call as `running`; a known call id leaves the stored record untouched and returns false. */
  start(record: Omit<ToolCallRecord, 'status' | 'result' | 'createdAt' | 'finishedAt'>): Promise<boolean> {
    return storeOperation('toolCalls.start', async () => {
      const result = await startQuery.execute(this.#ctx.db, newCall(record, this.#ctx.now()));
      return result.numAffectedRows === 1n;
    });
  }

  /**
   * Records the outcome of a running call. A second finish of the same call is ignored, so a redelivered
   * completion cannot overwrite the first result.
   *
   * @throws StoreError `not_found` when the call was never started.
   */
  finish(callId: string, outcome: { status: 'succeeded' | 'failed'; result: string }): Promise<void> {
    return storeOperation('toolCalls.finish', async () => {
      const { db } = this.#ctx;
      const updated = await finishQuery.execute(db, { callId, status: outcome.status, result: outcome.result, now: this.#ctx.now() });
      if ((updated.numAffectedRows ?? 0n) > 0n) return;
      const exists = await db.selectFrom('tool_calls').select('call_id').where('call_id', '=', callId).executeTakeFirst();
      if (exists === undefined) throw new StoreError('not_found', `Tool call ${callId} was never started; call start() first.`);
    });
  }

  record(
    record: Omit<ToolCallRecord, 'status' | 'result' | 'createdAt' | 'finishedAt'>,
    outcome: { status: 'succeeded' | 'failed'; result: string },
  ): Promise<void> {
    return storeOperation('toolCalls.record', async () => {
      const now = this.#ctx.now();
      const inserted = await recordQuery.execute(this.#ctx.db, { ...newCall(record, now), status: outcome.status, result: outcome.result });
      if (inserted.numAffectedRows === 1n) return;
      await finishQuery.execute(this.#ctx.db, { callId: record.callId, status: outcome.status, result: outcome.result, now });
    });
  }

  findByCallId(callId: string): Promise<ToolCallRecord | undefined> {
    return storeOperation('toolCalls.findByCallId', async () => {
      const row = (await findByCallIdQuery.execute(this.#ctx.db, { callId })).rows[0];
      return row === undefined ? undefined : toToolCall(row);
    });
  }

  /** The session's calls by start time (ties broken by call id). */
  listBySession(sessionId: string): Promise<ToolCallRecord[]> {
    return storeOperation('toolCalls.listBySession', async () => {
      const rows = await this.#ctx.db
        .selectFrom('tool_calls')
        .selectAll()
        .where('session_id', '=', sessionId)
        .orderBy('created_at')
        .orderBy('call_id')
        .execute();
      return rows.map(toToolCall);
    });
  }

  listByTurn(turnId: string): Promise<ToolCallRecord[]> {
    return storeOperation('toolCalls.listByTurn', async () => {
      const rows = await this.#ctx.db.selectFrom('tool_calls').selectAll().where('turn_id', '=', turnId).orderBy('created_at').orderBy('call_id').execute();
      return rows.map(toToolCall);
    });
  }
}

interface NewCall {
  callId: string;
  sessionId: string;
  userId: string;
  correlationId: string;
  name: string;
  arguments: string;
  turnId: string | null;
  now: number;
}

function newCall(record: Omit<ToolCallRecord, 'status' | 'result' | 'createdAt' | 'finishedAt'>, now: number): NewCall {
  const { callId, sessionId, userId, correlationId, name } = record;
  return { callId, sessionId, userId, correlationId, name, arguments: record.arguments, turnId: record.turnId ?? null, now };
}

/** A call's insert, ignored when the call id is recorded already; running, or (`outcome`) finished. */
function insertCall(
  db: Kysely<Database>,
  dialect: DialectStrategy,
  $: NewCall,
  outcome?: { readonly status: 'succeeded' | 'failed'; readonly result: string },
) {
  return dialect.insertOrIgnore(
    db.insertInto('tool_calls').values({
      call_id: $.callId,
      session_id: $.sessionId,
      user_id: $.userId,
      correlation_id: $.correlationId,
      name: $.name,
      arguments: $.arguments,
      status: outcome?.status ?? 'running',
      result: outcome?.result ?? null,
      created_at: $.now,
      finished_at: outcome === undefined ? null : $.now,
      turn_id: $.turnId,
    }),
    ['call_id'],
  );
}

const startQuery = prepared((db, $: NewCall, dialect) => insertCall(db, dialect, $));

const recordQuery = prepared((db, $: NewCall & { status: 'succeeded' | 'failed'; result: string }, dialect) => insertCall(db, dialect, $, $));

/** Only a running call: a second finish of the same call changes nothing. */
const finishQuery = prepared((db, $: { callId: string; status: 'succeeded' | 'failed'; result: string; now: number }) =>
  db.updateTable('tool_calls').set({ status: $.status, result: $.result, finished_at: $.now }).where('call_id', '=', $.callId).where('status', '=', 'running'),
);

const findByCallIdQuery = prepared((db, $: { callId: string }) => db.selectFrom('tool_calls').selectAll().where('call_id', '=', $.callId));
