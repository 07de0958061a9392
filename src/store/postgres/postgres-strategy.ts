import { sql } from 'kysely';
import { fromStoredCost } from '../../domain/money.js';
import { sqliteAndPostgresCommons, type CostSql, type DialectStrategy } from '../kysely/dialect-strategy.js';
import { columnsOf, PREPARED_MAX_ROWS, ROWS_PER_INSERT } from '../kysely/message-rows.js';
import { preparedBatch, type PreparedBatch } from '../kysely/prepared-query.js';
import { sessionWrite, sessionWriteQuery, shapeIndex } from '../kysely/session-write.js';
import type { MessageValues } from '../kysely/schema.js';
import type { SessionWriteArgs, SessionWriteShape } from '../kysely/session-write-args.js';

const numericCost: CostSql = { add: (amount) => sql<string>`cost + cast(${amount} as numeric)`, isZero: sql<boolean>`cost = 0` };

/**
 * PostgreSQL: an append is one statement (the session write in a CTE, the insert numbered from it); costs are
 * `numeric`, summed exactly by the server; concurrent writers lock what they read.
 */
export const postgresStrategy: DialectStrategy = {
  dialect: 'postgres',
  async reserveSeqs(trx, args, shape) {
    const row = (await sessionWriteQuery(shape).execute(trx, args)).rows[0];
    return row === undefined ? undefined : Number(row.last_seq);
  },
  async appendInOneStatement(db, args, shape, rows) {
    if (rows.length === 0 || rows.length > ROWS_PER_INSERT) return false;
    const inserted = (await appendInOneStatementQuery(shape).execute(db, args, rows)).rows;
    const seqById = new Map(inserted.map((row) => [row.id, Number(row.seq)]));
    for (const row of rows) row.seq = seqById.get(row.id) ?? Number.NaN;
    return true;
  },
  costSql: () => numericCost,
  // numeric sums exactly.
  sumMoney: (column) => sql<string | null>`cast(sum(${column}) as text)`,
  readMoneySum: (value) => (value === null ? '0' : fromStoredCost(value)),
  ...sqliteAndPostgresCommons,
  lockForUpdate: (select, options) => (options?.allowReferences ? select.forNoKeyUpdate() : select.forUpdate()) as typeof select,
};

/**
 * The session write and the insert as one statement — one round trip, atomic without a transaction. The UPDATE in
 * the CTE takes the session row lock, so a concurrent append waits and then sees the new `last_seq`. A refused
 * session write leaves the CTE empty and `seq` null, which the insert refuses (the repository explains why).
 * One template per session-write shape.
 */
const appendInOneStatementQueries: PreparedBatch<SessionWriteArgs, MessageValues, { id: string; seq: number }>[] = [];

function appendInOneStatementQuery(shape: SessionWriteShape): PreparedBatch<SessionWriteArgs, MessageValues, { id: string; seq: number }> {
  return (appendInOneStatementQueries[shapeIndex(shape)] ??= preparedBatch(
    (db, $: SessionWriteArgs, rows: readonly MessageValues[]) =>
      db
        .with('s', (qb) => sessionWrite(qb, $, shape, shape.usage ? numericCost : undefined).returning('last_seq'))
        .insertInto('messages')
        .values(rows.map((row, index) => columnsOf(row, sql<number>`(select last_seq from s) - ${rows.length - 1 - index}`)))
        .returning(['id', 'seq']),
    { maxRows: PREPARED_MAX_ROWS },
  ));
}
