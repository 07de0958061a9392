import { StoreError } from '../domain/errors.js';
import type { ToolCallRecord } from '../domain/model.js';
import type { ToolCallRepository } from '../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { toToolCall } from './rows.js';
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
      const result = await this.#ctx.db
        .insertInto('tool_calls')
        .values({
          call_id: record.callId,
          session_id: record.sessionId,
          user_id: record.userId,
          correlation_id: record.correlationId,
          name: record.name,
          arguments: record.arguments,
          status: 'running',
          result: null,
          created_at: this.#ctx.now(),
          finished_at: null,
        })
        .onConflict((oc) => oc.column('call_id').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
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
      const updated = await db
        .updateTable('tool_calls')
        .set({ status: outcome.status, result: outcome.result, finished_at: this.#ctx.now() })
        .where('call_id', '=', callId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (updated.numUpdatedRows > 0n) return;
      const exists = await db.selectFrom('tool_calls').select('call_id').where('call_id', '=', callId).executeTakeFirst();
      if (exists === undefined) throw new StoreError('not_found', `Tool call ${callId} was never started; call start() first.`);
    });
  }

  findByCallId(callId: string): Promise<ToolCallRecord | undefined> {
    return storeOperation('toolCalls.findByCallId', async () => {
      const row = await this.#ctx.db.selectFrom('tool_calls').selectAll().where('call_id', '=', callId).executeTakeFirst();
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
}
