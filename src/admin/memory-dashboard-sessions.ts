import type { DashboardSessionRepository, NewDashboardSession } from '../domain/ports/store.js';

/**
 * Dashboard sign-ins held in this process only: what `createHttpApp` uses when it is given no store. A restart
 * signs everyone out, and a sign-out reaches no other process; Palaver itself always passes the database's.
 */
export class MemoryDashboardSessions implements DashboardSessionRepository {
  readonly #expiresAt = new Map<string, number>();

  async create(session: NewDashboardSession): Promise<void> {
    await this.deleteExpired(session.createdAt);
    this.#expiresAt.set(session.id, session.expiresAt);
  }

  async isActive(id: string, now: number): Promise<boolean> {
    return (this.#expiresAt.get(id) ?? 0) > now;
  }

  async revoke(id: string): Promise<void> {
    this.#expiresAt.delete(id);
  }

  async deleteExpired(now: number): Promise<number> {
    let dropped = 0;
    for (const [id, expiresAt] of this.#expiresAt) {
      if (expiresAt > now) continue;
      this.#expiresAt.delete(id);
      dropped += 1;
    }
    return dropped;
  }
}
