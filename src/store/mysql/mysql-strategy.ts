import { sql, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { fromStoredCost } from '../../domain/money.js';
import type { CostSql, DialectStrategy } from '../kysely/dialect-strategy.js';
import { prepared, type PreparedQuery } from '../kysely/prepared-query.js';
import { atomically } from '../kysely/repository-context.js';
import { sessionWrite, shapeIndex } from '../kysely/session-write.js';
import type { SessionWriteArgs, SessionWriteShape } from '../kysely/session-write-args.js';

const decimalCost: CostSql = { add: (amount) => sql<string>`cost + cast(${amount} as decimal(20, 10))`, isZero: sql<boolean>`cost = 0` };

/**
 * MariaDB (10.11+) and MySQL: costs are DECIMAL, summed exactly by the server; concurrent writers lock what they
 * read. There is no UPDATE … RETURNING (and Kysely's MySQL adapter reads rows from no write), so a write that must
 * hand back its row writes, then reads the row in the same transaction. Upserts are ON DUPLICATE KEY UPDATE; the
 * pool (`../mysql/`) reports the rows an UPDATE matched and an upsert changed, as the repositories expect.
 */
export const mysqlStrategy: DialectStrategy = {
  dialect: 'mysql',
  async reserveSeqs(trx, args, shape) {
    const result = await sessionWriteQuery(shape).execute(trx, args);
    if (result.numAffectedRows !== 1n) return undefined;
    // The UPDATE holds the row until the transaction ends, so this reads the seq it handed out.
    const row = await trx.selectFrom('sessions').select('last_seq').where('id', '=', args.id).executeTakeFirst();
    return row === undefined ? undefined : Number(row.last_seq);
  },
  costSql: () => decimalCost,
  sumMoney: (column) => sql<string | null>`cast(sum(${column}) as char)`,
  readMoneySum: (value) => (value === null ? '0' : fromStoredCost(value)),
  writeReturning(db, write, readBack) {
    return atomically(db, async (trx) => {
      const result = (await write(trx).withPlugin(withoutReturning).executeTakeFirst()) as { numUpdatedRows?: bigint; numInsertedOrUpdatedRows?: bigint };
      const written = result.numUpdatedRows ?? result.numInsertedOrUpdatedRows ?? 0n;
      return written === 0n ? undefined : readBack(trx);
    });
  },
  epochDay: (column, dayMs) => sql<string>`cast(${column} div ${sql.lit(dayMs)} as char)`,
  // ON DUPLICATE KEY UPDATE fires on any unique key, not only `keys`: the first key set to itself changes nothing,
  // which the pool reports as 0 rows. (INSERT IGNORE would also turn foreign key and other errors into warnings.)
  insertOrIgnore: (insert, keys) => insert.onDuplicateKeyUpdate({ [keys[0]!]: sql.ref(keys[0]!) } as any) as typeof insert,
  upsert: (insert, _keys, { replace, increment }) => {
    const set: Record<string, unknown> = {};
    // MySQL assigns left to right, each seeing the ones before: the increment reads the old row, so it goes first.
    if (increment !== undefined) set[increment] = sql`${sql.ref(increment)} + 1`;
    for (const column of replace) set[column] = sql`values(${sql.ref(column)})`;
    return insert.onDuplicateKeyUpdate(set as any) as typeof insert;
  },
  // No FOR NO KEY UPDATE here: FOR UPDATE also holds up inserts referencing the row until the transaction ends.
  lockForUpdate: (select) => select.forUpdate() as typeof select,
  // ON DUPLICATE KEY UPDATE has no WHERE, and MySQL no RETURNING.
  guardedUpsertReturning: false,
};

/** Drops RETURNING from a write, for {@link mysqlStrategy.writeReturning}. */
const withoutReturning: KyselyPlugin = {
  transformQuery: ({ node }) => ('returning' in node ? ({ ...node, returning: undefined } as RootOperationNode) : node),
  transformResult: async ({ result }) => result,
};

const sessionWriteQueries: PreparedQuery<SessionWriteArgs, unknown>[] = [];

/** The session write without RETURNING, one prepared query per shape. */
function sessionWriteQuery(shape: SessionWriteShape): PreparedQuery<SessionWriteArgs, unknown> {
  return (sessionWriteQueries[shapeIndex(shape)] ??= prepared((db, $: SessionWriteArgs) => sessionWrite(db, $, shape, shape.usage ? decimalCost : undefined)));
}
