import { sql, type ExpressionBuilder, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { DialectStrategy } from './dialect-strategy.js';
import { prepared, type PreparedQuery } from './prepared-query.js';
import { atomically } from './repository-context.js';
import type { Database } from './schema.js';

/** The tables whose rows are leased to the process that works on them: the durable inbox and the outbox. */
type LeasedTable = 'inbound_messages' | 'deliveries';

/** The state a leased row is worked on in (`queued` messages, `pending` parts). */
const OPEN_STATE: Record<LeasedTable, string> = { inbound_messages: 'queued', deliveries: 'pending' };

/** Inbound messages count the turns that take them and may wait for a retry (`attempts`, `not_before`). */
const COUNTS_ATTEMPTS: Record<LeasedTable, boolean> = { inbound_messages: true, deliveries: false };

/**
 * Whether a turn holding the message (a correlated subquery on `inbound_messages.id`) began work: the journal kept a
 * model call or a tool call of it. A message that was only queued, or waited in its quiet window, has none.
 */
function begunTurn(eb: ExpressionBuilder<any, any>) {
  const journaled = (table: 'turn_model_calls' | 'tool_calls') =>
    eb.exists(eb.selectFrom(table).select(sql.lit(1).as('one')).whereRef(`${table}.turn_id`, '=', 'tm.turn_id'));
  return eb.exists(
    eb
      .selectFrom('turn_messages as tm')
      .select(sql.lit(1).as('one'))
      .whereRef('tm.inbound_id', '=', 'inbound_messages.id')
      .where(() => eb.or([journaled('turn_model_calls'), journaled('tool_calls')])),
  );
}

/**
 * A message taken over counts one more attempt only when a turn that began work on it did not finish (a crash cut it
 * off): a message that only waited is taken over without cost, so restarts alone never use its attempts up. A failed
 * turn that already counted the next attempt when it set `not_before` (see `InboundRepository.retryLater`) costs none
 * either: a process that stopped before retrying used no attempt.
 */
function countAttempt(row: Selectable<Database['inbound_messages']> & { readonly begun: unknown }): Selectable<Database['inbound_messages']> {
  const { begun, ...message } = row;
  const counts = row.not_before === null && Boolean(Number(begun));
  return { ...message, attempts: Number(row.attempts) + (counts ? 1 : 0), not_before: null };
}

/** Extends the lease of every open row `owner` holds; returns how many. */
export async function renewLeases(db: Kysely<Database>, table: LeasedTable, owner: string, leaseUntil: number): Promise<number> {
  const result = await RENEW_LEASES[table].execute(db, { owner, leaseUntil });
  return Number(result.numAffectedRows ?? 0n);
}

// The heartbeat renews every half second, busy or idle: prepared, a renewal allocates next to nothing, so an idle
// process's allocation rate drops low enough for V8's memory reducer to give the heap grown under load back.
const RENEW_LEASES: Record<LeasedTable, PreparedQuery<{ owner: string; leaseUntil: number }, unknown>> = {
  inbound_messages: prepared((db, $: { owner: string; leaseUntil: number }) =>
    db.updateTable('inbound_messages').set({ lease_until: $.leaseUntil }).where('state', '=', OPEN_STATE.inbound_messages).where('owner', '=', $.owner),
  ),
  deliveries: prepared((db, $: { owner: string; leaseUntil: number }) =>
    db.updateTable('deliveries').set({ lease_until: $.leaseUntil }).where('state', '=', OPEN_STATE.deliveries).where('owner', '=', $.owner),
  ),
};

/**
 * A prepared query that finds (at most) one row `claimExpired` could take, whatever its channel, or none. It looks
 * for a superset of what the claim takes (the claim adds its channels and the caller's other conditions), so when it
 * finds none, the claim would take none either.
 */
export type ExpiredRowProbe = PreparedQuery<{ now: number }, unknown>;

/**
 * Takes over open rows of `channels` whose lease ran out before `now`, in `order`, leasing them to `owner` until
 * `leaseUntil`. Read and take-over happen in one transaction, each row only if its lease is still expired: of two
 * processes recovering at once, one gets a row and the other does not.
 */
export async function claimExpired<T extends LeasedTable>(
  db: Kysely<Database>,
  dialect: DialectStrategy,
  table: T,
  input: {
    readonly owner: string;
    readonly now: number;
    readonly leaseUntil: number;
    readonly channels: readonly string[];
    readonly limit: number;
    readonly order: readonly string[];
    /** A further condition on the rows handed out (the table's own rule). */
    readonly narrow?: (select: SelectQueryBuilder<any, any, any>) => SelectQueryBuilder<any, any, any>;
    /**
     * Run first, outside the transaction: when it finds no row, nothing is claimed and no transaction is opened. The
     * heartbeat looks for expired rows every half second and almost always finds none; the transaction and the query
     * built for the channels cost some 40 KB of garbage each time, which kept an idle process's allocation rate up.
     */
    readonly probe?: ExpiredRowProbe;
  },
): Promise<Selectable<Database[T]>[]> {
  if (input.probe && (await input.probe.execute(db, { now: input.now })).rows.length === 0) return [];
  return atomically(db, async (trx) => {
    // The two tables share these columns; Kysely cannot type a query over "either table", hence the loose handle.
    const any = trx as Kysely<any>;
    let select = any
      .selectFrom(table as LeasedTable)
      .selectAll()
      .where('state', '=', OPEN_STATE[table])
      .where('lease_until', '<', input.now)
      .where('channel', 'in', [...input.channels])
      // Never its own rows: a process's own lease runs out only when its renewal lags, and its own turn or send is
      // still on them; taking them would answer (or send) twice.
      .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '<>', input.owner)]));
    // A message whose turn failed waits for its retry time, whoever takes it.
    if (COUNTS_ATTEMPTS[table])
      select = select.where((eb) => eb.or([eb('not_before', 'is', null), eb('not_before', '<=', input.now)])).select((eb) => begunTurn(eb).as('begun'));
    if (input.narrow) select = input.narrow(select);
    for (const column of input.order) select = select.orderBy(column);
    const rows = (await dialect.lockForUpdate(select.limit(input.limit)).execute()) as Selectable<Database[T]>[];
    const claimed: Selectable<Database[T]>[] = [];
    for (const row of rows) {
      const taken = await any
        .updateTable(table as LeasedTable)
        .set((eb) => ({
          owner: input.owner,
          lease_until: input.leaseUntil,
          ...(COUNTS_ATTEMPTS[table]
            ? {
                attempts: eb
                  .case()
                  .when(eb.and([eb('not_before', 'is', null), begunTurn(eb)]))
                  .then(sql`attempts + 1`)
                  .else(eb.ref('attempts'))
                  .end(),
                not_before: null,
              }
            : {}),
        }))
        .where('id', '=', (row as { id: string }).id)
        .where('state', '=', OPEN_STATE[table])
        .where('lease_until', '<', input.now)
        .executeTakeFirst();
      if (taken.numUpdatedRows !== 1n) continue;
      claimed.push(
        COUNTS_ATTEMPTS[table] ? (countAttempt(row as Selectable<Database['inbound_messages']> & { begun: unknown }) as Selectable<Database[T]>) : row,
      );
    }
    return claimed;
  });
}
