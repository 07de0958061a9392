import { sql, type Selectable } from 'kysely';
import type { ApprovalDecider, ApprovalStatus, ToolApproval } from '../../domain/approval.js';
import type { ApprovalRepository, NewToolApproval } from '../../domain/ports/store.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { ToolApprovalsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/**
 * Approval requests (see the port). A decision is one guarded UPDATE (`status = 'pending'` and the expiry on the
 * right side of `now`), so of two processes deciding at once exactly one changes the row.
 */
export class KyselyApprovalRepository implements ApprovalRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  request(approval: NewToolApproval): Promise<ToolApproval> {
    return storeOperation('approvals.request', async () => {
      const { db, dialect } = this.#ctx;
      await dialect
        .insertOrIgnore(
          db.insertInto('tool_approvals').values({
            id: approval.id,
            turn_id: approval.turnId,
            call_id: approval.callId,
            session_id: approval.sessionId,
            user_id: approval.userId,
            channel: approval.channel,
            conversation_id: approval.conversationId,
            account_id: approval.accountId,
            account_namespace: approval.accountNamespace,
            conversation_kind: approval.conversationKind,
            tool: approval.tool,
            arguments: approval.arguments,
            summary: approval.summary,
            decided_by_kind: approval.by,
            language: approval.language,
            status: 'pending',
            requested_at: approval.requestedAt.getTime(),
            expires_at: approval.expiresAt.getTime(),
            asked_again: 0,
            model_calls: approval.modelCalls,
          }),
          ['turn_id', 'call_id'],
        )
        .execute();
      // Held only while this request still waits: asked again for a call already decided (a resumed turn), the
      // decision comes back and the conversation is not held again (nothing would lift that hold).
      await db
        .updateTable('sessions')
        .set({ approval_pending_at: approval.requestedAt.getTime() })
        .where('id', '=', approval.sessionId)
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('tool_approvals')
              .select(sql.lit(1).as('one'))
              .where('tool_approvals.turn_id', '=', approval.turnId)
              .where('tool_approvals.call_id', '=', approval.callId)
              .where('tool_approvals.status', '=', 'pending'),
          ),
        )
        .execute();
      const row = await db
        .selectFrom('tool_approvals')
        .selectAll()
        .where('turn_id', '=', approval.turnId)
        .where('call_id', '=', approval.callId)
        .executeTakeFirstOrThrow();
      return toApproval(row);
    });
  }

  get(id: string): Promise<ToolApproval | undefined> {
    return storeOperation('approvals.get', async () => {
      const row = await this.#ctx.db.selectFrom('tool_approvals').selectAll().where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : toApproval(row);
    });
  }

  forTurn(turnId: string): Promise<ToolApproval[]> {
    return storeOperation('approvals.forTurn', async () => {
      const rows = await this.#ctx.db.selectFrom('tool_approvals').selectAll().where('turn_id', '=', turnId).orderBy('requested_at').execute();
      return rows.map(toApproval);
    });
  }

  pendingFor(sessionId: string): Promise<ToolApproval | undefined> {
    return storeOperation('approvals.pendingFor', async () => {
      const row = await this.#ctx.db
        .selectFrom('tool_approvals')
        .selectAll()
        .where('session_id', '=', sessionId)
        .where('status', '=', 'pending')
        .orderBy('requested_at')
        .executeTakeFirst();
      return row === undefined ? undefined : toApproval(row);
    });
  }

  list(options: { readonly status?: ApprovalStatus; readonly limit: number }): Promise<ToolApproval[]> {
    return storeOperation('approvals.list', async () => {
      let query = this.#ctx.db.selectFrom('tool_approvals').selectAll();
      if (options.status !== undefined) query = query.where('status', '=', options.status);
      const rows = await query.orderBy('requested_at', 'desc').orderBy('id', 'desc').limit(options.limit).execute();
      return rows.map(toApproval);
    });
  }

  decide(
    id: string,
    decision: { readonly status: Exclude<ApprovalStatus, 'pending'>; readonly by: string; readonly reason: string | null; readonly now: number },
  ): Promise<boolean> {
    return storeOperation('approvals.decide', async () => {
      const result = await this.#ctx.db
        .updateTable('tool_approvals')
        .set({ status: decision.status, decided_by: decision.by, decided_at: decision.now, reason: decision.reason })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        // A yes or no counts only in time; the expiry only after it.
        .where('expires_at', decision.status === 'expired' ? '<=' : '>', decision.now)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }

  askAgain(id: string): Promise<boolean> {
    return storeOperation('approvals.askAgain', async () => {
      const result = await this.#ctx.db
        .updateTable('tool_approvals')
        .set({ asked_again: 1 })
        .where('id', '=', id)
        .where('status', '=', 'pending')
        .where('asked_again', '=', 0)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }

  listExpired(now: number, limit: number): Promise<ToolApproval[]> {
    return storeOperation('approvals.listExpired', async () => {
      const rows = await this.#ctx.db
        .selectFrom('tool_approvals')
        .selectAll()
        .where('status', '=', 'pending')
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(limit)
        .execute();
      return rows.map(toApproval);
    });
  }

  release(sessionId: string): Promise<void> {
    return storeOperation('approvals.release', () =>
      atomically(this.#ctx.db, async (db) => {
        // The session's row is locked first, and its requests are read by a statement of their own after that: two
        // transactions deciding the session's last two requests at once would otherwise each still see the other's
        // as pending (read committed) and neither would lift the hold. Locked, the second one reads after the first
        // committed. A plain read, so it never waits for (or deadlocks with) the other's locked request rows.
        await this.#ctx.dialect.lockForUpdate(db.selectFrom('sessions').select('id').where('id', '=', sessionId)).execute();
        const waiting = await db
          .selectFrom('tool_approvals')
          .select('id')
          .where('session_id', '=', sessionId)
          .where('status', '=', 'pending')
          .limit(1)
          .executeTakeFirst();
        if (waiting !== undefined) return;
        await db.updateTable('sessions').set({ approval_pending_at: null }).where('id', '=', sessionId).execute();
      }),
    );
  }
}

function toApproval(row: Selectable<ToolApprovalsTable>): ToolApproval {
  return {
    id: row.id,
    turnId: row.turn_id,
    callId: row.call_id,
    sessionId: row.session_id,
    userId: row.user_id,
    channel: row.channel,
    conversationId: row.conversation_id,
    accountId: row.account_id,
    accountNamespace: row.account_namespace,
    conversationKind: row.conversation_kind === 'shared' ? 'shared' : 'direct',
    tool: row.tool,
    arguments: row.arguments,
    summary: row.summary,
    by: row.decided_by_kind as ApprovalDecider,
    language: row.language,
    status: row.status as ApprovalStatus,
    requestedAt: toDate(row.requested_at),
    expiresAt: toDate(row.expires_at),
    askedAgain: Number(row.asked_again) === 1,
    modelCalls: Number(row.model_calls),
    decidedAt: row.decided_at === null ? null : toDate(row.decided_at),
    decidedBy: row.decided_by,
    reason: row.reason,
  };
}
