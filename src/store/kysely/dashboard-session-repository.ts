import type { ActiveDashboardSession, DashboardSessionRepository, NewDashboardSession } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/** Dashboard sign-ins, one row each, looked up by primary key on every request that shows a cookie. */
export class KyselyDashboardSessionRepository implements DashboardSessionRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  create(session: NewDashboardSession): Promise<void> {
    return storeOperation('dashboardSessions.create', async () => {
      const { db } = this.#ctx;
      // Sign-ins are few (each needs the admin token), so tidying up on each one keeps the table small.
      await db.deleteFrom('dashboard_sessions').where('expires_at', '<=', session.createdAt).execute();
      await db
        .insertInto('dashboard_sessions')
        .values({ id: session.id, created_at: session.createdAt, expires_at: session.expiresAt, operator_id: session.operatorId ?? null })
        .execute();
    });
  }

  findActive(id: string, now: number): Promise<ActiveDashboardSession | undefined> {
    return storeOperation('dashboardSessions.findActive', async () => {
      const row = await this.#ctx.db
        .selectFrom('dashboard_sessions')
        .select('operator_id')
        .where('id', '=', id)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return row && { operatorId: row.operator_id };
    });
  }

  revoke(id: string): Promise<void> {
    return storeOperation('dashboardSessions.revoke', async () => {
      await this.#ctx.db.deleteFrom('dashboard_sessions').where('id', '=', id).execute();
    });
  }

  revokeOperator(operatorId: string): Promise<number> {
    return storeOperation('dashboardSessions.revokeOperator', async () => {
      const result = await this.#ctx.db.deleteFrom('dashboard_sessions').where('operator_id', '=', operatorId).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }

  deleteExpired(now: number): Promise<number> {
    return storeOperation('dashboardSessions.deleteExpired', async () => {
      const result = await this.#ctx.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).executeTakeFirst();
      return Number(result.numDeletedRows);
    });
  }
}
