import type { Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import type { Handoff, HandoffRepository, HandoffSource, NewHandoff } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { HandoffsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

/**
 * Handoffs to a person. Every decision is one guarded statement, so it holds across processes without locks: the
 * unique `open_key` keeps one open handoff per conversation, and a notice round is claimed by the UPDATE that moves
 * `notices` from the count the claimer read (only one of several racing processes matches it).
 */
export class KyselyHandoffRepository implements HandoffRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  open(handoff: NewHandoff): Promise<{ readonly handoff: Handoff; readonly opened: boolean }> {
    return storeOperation('handoffs.open', async () => {
      const { db, dialect } = this.#ctx;
      const id = newId();
      await dialect
        .insertOrIgnore(
          db.insertInto('handoffs').values({
            id,
            session_id: handoff.sessionId,
            user_id: handoff.userId,
            reason: handoff.reason,
            source: handoff.source,
            requested_at: handoff.at,
            open_key: handoff.sessionId,
            notices: 0,
            next_notice_at: handoff.at,
          }),
          ['open_key'],
        )
        .execute();
      const open = await this.findOpen(handoff.sessionId);
      if (open === undefined) throw new Error(`the handoff of conversation ${handoff.sessionId} was neither opened nor found open`);
      return { handoff: open, opened: open.id === id };
    });
  }

  findOpen(sessionId: string): Promise<Handoff | undefined> {
    return storeOperation('handoffs.findOpen', async () => {
      const row = await this.#ctx.db.selectFrom('handoffs').selectAll().where('open_key', '=', sessionId).executeTakeFirst();
      return row === undefined ? undefined : toHandoff(row);
    });
  }

  listOpen(limit: number): Promise<Handoff[]> {
    return storeOperation('handoffs.listOpen', async () => {
      const rows = await this.#ctx.db
        .selectFrom('handoffs')
        .selectAll()
        .where('open_key', 'is not', null)
        .orderBy('requested_at')
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(toHandoff);
    });
  }

  listDue(now: number, limit: number): Promise<Handoff[]> {
    return storeOperation('handoffs.listDue', async () => {
      // `next_notice_at` is cleared when a handoff is taken or closed, so due ones are found by its index alone.
      const rows = await this.#ctx.db
        .selectFrom('handoffs')
        .selectAll()
        .where('next_notice_at', '<=', now)
        .orderBy('next_notice_at')
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map(toHandoff);
    });
  }

  claimNotice(handoff: Handoff, nextAt: number | null): Promise<boolean> {
    return storeOperation('handoffs.claimNotice', async () => {
      const result = await this.#ctx.db
        .updateTable('handoffs')
        .set({ notices: handoff.notices + 1, next_notice_at: nextAt })
        .where('id', '=', handoff.id)
        .where('notices', '=', handoff.notices)
        .where('open_key', 'is not', null)
        .where('taken_by', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }

  take(sessionId: string, operator: string, at: number): Promise<Handoff | undefined> {
    return storeOperation('handoffs.take', async () => {
      const result = await this.#ctx.db
        .updateTable('handoffs')
        .set({ taken_by: operator, taken_at: at, next_notice_at: null })
        .where('open_key', '=', sessionId)
        .executeTakeFirst();
      return result.numUpdatedRows === 0n ? undefined : this.findOpen(sessionId);
    });
  }

  close(sessionId: string, by: string, at: number): Promise<Handoff | undefined> {
    return storeOperation('handoffs.close', async () => {
      const open = await this.findOpen(sessionId);
      if (open === undefined) return undefined;
      const result = await this.#ctx.db
        .updateTable('handoffs')
        .set({ open_key: null, closed_at: at, closed_by: by, next_notice_at: null })
        .where('id', '=', open.id)
        .where('open_key', '=', sessionId)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return undefined;
      return { ...open, closedAt: new Date(at), closedBy: by, nextNoticeAt: null };
    });
  }
}

function toHandoff(row: Selectable<HandoffsTable>): Handoff {
  return {
    id: row.id,
    sessionId: row.session_id,
    userId: row.user_id,
    reason: row.reason,
    source: row.source as HandoffSource,
    requestedAt: toDate(row.requested_at),
    takenBy: row.taken_by,
    takenAt: row.taken_at == null ? null : toDate(row.taken_at),
    closedAt: row.closed_at == null ? null : toDate(row.closed_at),
    closedBy: row.closed_by,
    notices: Number(row.notices),
    nextNoticeAt: row.next_notice_at == null ? null : toDate(row.next_notice_at),
  };
}
