import type { ActiveDashboardSession, DashboardSessionRepository, NewDashboardSession } from '../domain/ports/store.js';

/**
 * Dashboard sign-ins held in this process only: what `createHttpApp` uses when it is given no store. A restart
 * signs everyone out, and a sign-out reaches no other process; Palaver itself always passes the database's.
 */
export class MemoryDashboardSessions implements DashboardSessionRepository {
  readonly #sessions = new Map<string, { readonly expiresAt: number; readonly operatorId: string | null }>();

  async create(session: NewDashboardSession): Promise<void> {
    await this.deleteExpired(session.createdAt);
    this.#sessions.set(session.id, { expiresAt: session.expiresAt, operatorId: session.operatorId ?? null });
  }

  async findActive(id: string, now: number): Promise<ActiveDashboardSession | undefined> {
    const session = this.#sessions.get(id);
    return session !== undefined && session.expiresAt > now ? { operatorId: session.operatorId } : undefined;
  }

  async revoke(id: string): Promise<void> {
    this.#sessions.delete(id);
  }

  async revokeOperator(operatorId: string): Promise<number> {
    let dropped = 0;
    for (const [id, session] of this.#sessions) {
      if (session.operatorId !== operatorId) continue;
      this.#sessions.delete(id);
      dropped += 1;
    }
    return dropped;
  }

  async deleteExpired(now: number): Promise<number> {
    let dropped = 0;
    for (const [id, session] of this.#sessions) {
      if (session.expiresAt > now) continue;
      this.#sessions.delete(id);
      dropped += 1;
    }
    return dropped;
  }
}
