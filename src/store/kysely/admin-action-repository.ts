import type { Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { AdminAction, AdminActionKind, AdminActionRepository, NewAdminAction } from '../../domain/ports/store.js';
import { nextArrival } from './arrival.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { AdminActionsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/** The operators' audit, append-only; a send's idempotency key is unique in it. */
export class KyselyAdminActionRepository implements AdminActionRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  record(action: NewAdminAction) {
    return storeOperation('adminActions.record', async () => {
      const { db, dialect } = this.#ctx;
      const now = this.#ctx.now();
      const row = {
        id: newId(),
        action: action.action,
        actor: action.actor,
        operator_id: action.operatorId ?? null,
        request_id: action.requestId ?? null,
        idempotency_key: action.idempotencyKey ?? null,
        session_id: action.sessionId ?? null,
        user_id: action.userId ?? null,
        details: JSON.stringify(action.details ?? {}),
        created_at: now,
        arrival: nextArrival(now),
      };
      if (row.idempotency_key === null) {
        await db.insertInto('admin_actions').values(row).execute();
        return { recorded: true as const, action: toAdminAction(row) };
      }
      // ON CONFLICT DO NOTHING rather than catching the violation: on PostgreSQL a failed statement would abort the
      // caller's transaction, and the caller still has to answer with the first action.
      const inserted = await dialect.insertOrIgnore(db.insertInto('admin_actions').values(row), ['idempotency_key']).executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 1n) return { recorded: true as const, action: toAdminAction(row) };
      const existing = await db.selectFrom('admin_actions').selectAll().where('idempotency_key', '=', row.idempotency_key).executeTakeFirstOrThrow();
      return { recorded: false as const, existing: toAdminAction(existing) };
    });
  }

  list(options: { readonly limit: number; readonly sessionId?: string }): Promise<AdminAction[]> {
    return storeOperation('adminActions.list', async () => {
      let query = this.#ctx.db.selectFrom('admin_actions').selectAll();
      if (options.sessionId !== undefined) query = query.where('session_id', '=', options.sessionId);
      const rows = await query
        .orderBy('arrival', 'desc')
        .orderBy('id', 'desc')
        .limit(Math.max(0, Math.trunc(options.limit)))
        .execute();
      return rows.map(toAdminAction);
    });
  }
}

function toAdminAction(row: Selectable<AdminActionsTable>): AdminAction {
  return {
    id: row.id,
    action: row.action as AdminActionKind,
    actor: row.actor,
    operatorId: row.operator_id,
    requestId: row.request_id,
    idempotencyKey: row.idempotency_key,
    sessionId: row.session_id,
    userId: row.user_id,
    details: JSON.parse(row.details) as Record<string, unknown>,
    createdAt: toDate(row.created_at),
  };
}
