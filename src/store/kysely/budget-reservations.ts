import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import { compareCosts, fromStoredCost, sumCosts, toStoredCost } from '../../domain/money.js';
import type { BudgetCaps, BudgetReservation, ReservationOutcome, SpendCap } from '../../domain/ports/store.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import type { Database } from './schema.js';

// Budget reservations: what running turns claimed of their user's daily budget (and their session's), checked and
// taken in one transaction, dropped by the turn's closing transaction. See `SpendRepository.reserve`.

/** Reserves `reservation.amount` unless a configured cap would be exceeded; see `SpendRepository.reserve`. */
export function reserveAgainstCaps(ctx: RepositoryContext, reservation: BudgetReservation, caps: BudgetCaps): Promise<ReservationOutcome> {
  const amount = toStoredCost(reservation.amount, 'amount');
  return atomically(ctx.db, async (db) => {
    const now = ctx.now();
    // One reservation of a user at a time: on PostgreSQL the user's row is locked (turns closing meanwhile still
    // write their spend); a SQLite transaction holds the only connection.
    await ctx.dialect.lockForUpdate(db.selectFrom('users').select('id').where('id', '=', reservation.userId), { allowReferences: true }).execute();
    const live = liveness(reservation, now);
    // This process's earlier claim for the turn (its next model call, or the turn run again) is replaced; the
    // user's dead ones are swept.
    await db
      .deleteFrom('budget_reservations')
      .where((eb) =>
        eb.or([
          eb.and([eb('turn_id', '=', reservation.turnId), eb('owner', '=', reservation.owner)]),
          eb.and([eb('user_id', '=', reservation.userId), eb.not(isLive(eb, live))]),
        ]),
      )
      .execute();
    const committed = await committedAgainst(db, reservation, caps, live);
    const wanted = caps.inCapCurrency(amount, reservation.currency);
    for (const cap of CAPS) {
      const limit = caps[cap];
      if (limit === undefined) continue;
      const total = sumCosts(committed[cap].map((row) => caps.inCapCurrency(fromStoredCost(row.amount), row.currency)));
      // Up to the cap itself is allowed: a turn may bring the spend to exactly the cap, not beyond.
      if (compareCosts(sumCosts([total, wanted]), limit) > 0) return { reserved: false, cap, committed: total };
    }
    await db
      .insertInto('budget_reservations')
      .values({
        turn_id: reservation.turnId,
        owner: reservation.owner,
        user_id: reservation.userId,
        day: reservation.day,
        session_id: reservation.sessionId,
        amount,
        currency: reservation.currency,
        created_at: now,
      })
      .execute();
    return { reserved: true };
  });
}

/** Drops the reservation `owner` holds for a turn, if any (another process's claim on the same turn stays). */
export async function releaseReservation(db: Kysely<Database>, turnId: string, owner: string): Promise<void> {
  await db.deleteFrom('budget_reservations').where('turn_id', '=', turnId).where('owner', '=', owner).execute();
}

const CAPS: readonly SpendCap[] = ['perUserPerDay', 'perSession'];

interface CommittedRow {
  readonly cap: SpendCap;
  readonly currency: string;
  readonly amount: string;
}

/** Who asks, and when: what {@link isLive} needs. */
interface Liveness {
  readonly now: number;
  /** The reserving process: its own claims are live (it knows its turns run). */
  readonly self: string;
  /** A process whose heartbeat is older than this is taken for stopped. */
  readonly heartbeatAfter: number;
}

function liveness(reservation: BudgetReservation, now: number): Liveness {
  return { now, self: reservation.owner, heartbeatAfter: now - reservation.liveWithinMs };
}

/**
 * A reservation is live while its turn's first message is still queued (the closing transaction answers it and drops
 * the claim together) and the process that reserved is running: it is the process asking, or its heartbeat is recent
 * (`processes.heartbeat_at`), or it still holds the message's lease. A lease that lapsed while its process was busy
 * does not end a claim; a process whose heartbeat stopped (it died, or was paused past the window) no longer holds
 * one, and the process that takes its message over reserves afresh.
 *
 * A summary's reservation (`turn_id` is the id of its summary claim) is live while that claim is still held (its write
 * ends the claim and drops the reservation together) and the process that reserved is running.
 */
function isLive(eb: ExpressionBuilder<Database, 'budget_reservations'>, live: Liveness) {
  const ownerRunning = (running: ExpressionBuilder<Database, 'budget_reservations'>) =>
    running.or([
      running('budget_reservations.owner', '=', live.self),
      running.exists(
        running
          .selectFrom('processes as p')
          .select('p.id')
          .whereRef('p.id', '=', 'budget_reservations.owner')
          .where('p.heartbeat_at', '>', live.heartbeatAfter),
      ),
    ]);
  return eb.or([
    eb.exists(
      eb
        .selectFrom('inbound_messages as i')
        .select('i.id')
        .whereRef('i.id', '=', 'budget_reservations.turn_id')
        .where('i.state', '=', 'queued')
        .where((running) =>
          running.or([
            ownerRunning(running),
            running.and([running('i.owner', '=', running.ref('budget_reservations.owner')), running('i.lease_until', '>', live.now)]),
          ]),
        ),
    ),
    eb.exists(
      eb
        .selectFrom('summary_claims as c')
        .select('c.session_id')
        .whereRef('c.claim_id', '=', 'budget_reservations.turn_id')
        .whereRef('c.owner', '=', 'budget_reservations.owner')
        .where((running) => ownerRunning(running)),
    ),
  ]);
}

/**
 * What counts against each configured cap, per currency: the user's spend of the day and the session's, each with the
 * live reservations of other turns. One statement, so that it reads one snapshot: a turn closing meanwhile (its spend
 * added, its reservation dropped) is seen either wholly or not at all.
 */
async function committedAgainst(
  db: Kysely<Database>,
  reservation: BudgetReservation,
  caps: BudgetCaps,
  live: Liveness,
): Promise<Record<SpendCap, CommittedRow[]>> {
  const label = (cap: SpendCap) => sql<SpendCap>`${sql.lit(cap)}`.as('cap');
  const reserved = (cap: SpendCap) =>
    db
      .selectFrom('budget_reservations')
      .select([label(cap), 'currency', 'amount'])
      .where((eb) => isLive(eb, live));
  const parts = [
    ...(caps.perUserPerDay === undefined
      ? []
      : [
          db
            .selectFrom('daily_spend')
            .select([label('perUserPerDay'), 'currency', 'cost as amount'])
            .where('user_id', '=', reservation.userId)
            .where('day', '=', reservation.day),
          reserved('perUserPerDay').where('user_id', '=', reservation.userId).where('day', '=', reservation.day),
        ]),
    ...(caps.perSession === undefined
      ? []
      : [
          db
            .selectFrom('sessions')
            .select([label('perSession'), 'currency', 'cost as amount'])
            .where('id', '=', reservation.sessionId),
          reserved('perSession').where('session_id', '=', reservation.sessionId),
        ]),
  ];
  const committed: Record<SpendCap, CommittedRow[]> = { perUserPerDay: [], perSession: [] };
  const [first, ...rest] = parts;
  if (first === undefined) return committed;
  const rows = (await rest.reduce((union, part) => union.unionAll(part as typeof first), first).execute()) as CommittedRow[];
  for (const row of rows) committed[row.cap].push(row);
  return committed;
}
