import { sql } from 'kysely';
import { onConflictUpserts, type CostSql, type DialectStrategy } from './dialect-strategy.js';
import { sessionWriteQuery } from './session-write.js';
import { engineOf } from './store-engine.js';

// Money is canonical decimal text on SQLite, so zero is exactly '0'; sums need the engine's exact SQL function.
const costSqlByFunction = new Map<string, CostSql>();

/**
 * SQLite: seqs from `UPDATE … RETURNING` inside the append's transaction (one writer at a time, so no row lock is
 * needed); exact cost sums only where the engine registered its decimal function (Palaver's own SQLite engine does;
 * a SQLite Kysely made elsewhere would add text as floats, so there the store sums in JavaScript).
 */
export const sqliteStrategy: DialectStrategy = {
  dialect: 'sqlite',
  async reserveSeqs(trx, args, shape) {
    const row = (await sessionWriteQuery(shape).execute(trx, args)).rows[0];
    return row === undefined ? undefined : Number(row.last_seq);
  },
  costSql(db) {
    const name = engineOf(db)?.addCostFunction;
    if (name === undefined) return undefined;
    let costSql = costSqlByFunction.get(name);
    if (costSql === undefined) {
      costSql = { add: (amount) => sql<string>`${sql.raw(name)}(cost, ${amount})`, isZero: sql<boolean>`cost = '0'` };
      costSqlByFunction.set(name, costSql);
    }
    return costSql;
  },
  ...onConflictUpserts,
  // One connection writes at a time: a read in a transaction already holds what it read.
  lockForUpdate: (select) => select,
};
