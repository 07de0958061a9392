import type { Selectable } from 'kysely';
import { newId } from '../../domain/ids.js';
import { nextArrival } from './arrival.js';
import type { IdentityEvent, IdentityEventKind, IdentityEventRepository, NewIdentityEvent } from '../../domain/ports/store.js';
import type { RepositoryContext } from './repository-context.js';
import { toDate } from './rows.js';
import type { IdentityEventsTable } from './schema.js';
import { storeOperation } from './store-errors.js';

const DEFAULT_LIMIT = 100;

/** The identity audit, append-only. */
export class KyselyIdentityEventRepository implements IdentityEventRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  add(event: NewIdentityEvent): Promise<IdentityEvent> {
    return storeOperation('identityEvents.add', async () => {
      const now = this.#ctx.now();
      const row = {
        id: newId(),
        user_id: event.userId,
        kind: event.kind,
        channel: event.channel ?? null,
        account_id: event.accountId ?? null,
        from_user_id: event.fromUserId ?? null,
        to_user_id: event.toUserId ?? null,
        actor: event.actor,
        details: JSON.stringify(event.details ?? {}),
        created_at: now,
        arrival: nextArrival(now),
      };
      await this.#ctx.db.insertInto('identity_events').values(row).execute();
      return toIdentityEvent(row);
    });
  }

  listByUser(userId: string, limit = DEFAULT_LIMIT): Promise<IdentityEvent[]> {
    return storeOperation('identityEvents.listByUser', async () => {
      const rows = await this.#ctx.db
        .selectFrom('identity_events')
        .selectAll()
        .where((eb) => eb.or([eb('user_id', '=', userId), eb('from_user_id', '=', userId), eb('to_user_id', '=', userId)]))
        .orderBy('arrival', 'desc')
        .limit(limit)
        .execute();
      return rows.reverse().map(toIdentityEvent);
    });
  }
}

function toIdentityEvent(row: Selectable<IdentityEventsTable>): IdentityEvent {
  return {
    id: row.id,
    userId: row.user_id,
    kind: row.kind as IdentityEventKind,
    channel: row.channel,
    accountId: row.account_id,
    fromUserId: row.from_user_id,
    toUserId: row.to_user_id,
    actor: row.actor,
    details: JSON.parse(row.details) as Record<string, unknown>,
    createdAt: toDate(row.created_at),
  };
}
