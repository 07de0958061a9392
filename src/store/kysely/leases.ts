import type { Kysely, Selectable } from 'kysely';
import type { DialectStrategy } from './dialect-strategy.js';
import { atomically } from './repository-context.js';
import type { Database } from './schema.js';

/** The tables whose rows are leased to the process that works on them: the durable inbox and the outbox. */
type LeasedTable = 'inbound_messages' | 'deliveries';

/** The state a leased row is worked on in (`queued` messages, `pending` parts). */
const OPEN_STATE: Record<LeasedTable, string> = { inbound_messages: 'queued', deliveries: 'pending' };

/** Extends the lease of every open row `owner` holds; returns how many. */
export async function renewLeases(db: Kysely<Database>, table: LeasedTable, owner: string, leaseUntil: number): Promise<number> {
  const result = await (db as Kysely<any>)
    .updateTable(table)
    .set({ lease_until: leaseUntil })
    .where('state', '=', OPEN_STATE[table])
    .where('owner', '=', owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Takes over open rows of `channels` whose lease ran out before `now`, in `order`, leasing them to `owner` until
 * `leaseUntil`. Read and take-over happen in one transaction, each row only if its lease is still expired: of two
 * processes recovering at once, one gets a row and the other does not.
 */
export function claimExpired<T extends LeasedTable>(
  db: Kysely<Database>,
  dialect: DialectStrategy,
  table: T,
  input: { readonly owner: string; readonly now: number; readonly leaseUntil: number; readonly channels: readonly string[]; readonly limit: number; readonly order: readonly string[] },
): Promise<Selectable<Database[T]>[]> {
  return atomically(db, async (trx) => {
    // The two tables share these columns; Kysely cannot type a query over "either table", hence the loose handle.
    const any = trx as Kysely<any>;
    let select = any.selectFrom(table as LeasedTable).selectAll().where('state', '=', OPEN_STATE[table]).where('lease_until', '<', input.now).where('channel', 'in', [...input.channels]);
    for (const column of input.order) select = select.orderBy(column);
    const rows = (await dialect.lockForUpdate(select.limit(input.limit)).execute()) as Selectable<Database[T]>[];
    const claimed: Selectable<Database[T]>[] = [];
    for (const row of rows) {
      const taken = await any
        .updateTable(table as LeasedTable)
        .set({ owner: input.owner, lease_until: input.leaseUntil })
        .where('id', '=', (row as { id: string }).id)
        .where('state', '=', OPEN_STATE[table])
        .where('lease_until', '<', input.now)
        .executeTakeFirst();
      if (taken.numUpdatedRows === 1n) claimed.push(row);
    }
    return claimed;
  });
}
