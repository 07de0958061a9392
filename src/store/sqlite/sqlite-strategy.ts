import { sql, type RawBuilder } from 'kysely';
import { COST_SCALE, fromStoredCost, MoneyDecimal } from '../../domain/money.js';
import { sqliteAndPostgresCommons, type CostSql, type DialectStrategy } from '../kysely/dialect-strategy.js';
import { sessionWriteQuery } from '../kysely/session-write.js';
import { engineOf } from '../kysely/store-engine.js';

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
  sumMoney: (column) => sql<string | null>`cast(sum(${wholePart(column)}) as text) || ':' || cast(sum(${fractionPart(column)}) as text)`,
  readMoneySum(value) {
    if (value === null) return '0';
    const [whole = '0', fraction = '0'] = value.split(':');
    return fromStoredCost(new MoneyDecimal(whole).plus(new MoneyDecimal(fraction).div(FRACTION_UNIT)).toFixed());
  },
  ...sqliteAndPostgresCommons,
  // One connection writes at a time: a read in a transaction already holds what it read.
  lockForUpdate: (select) => select,
};

// Exact sums of canonical decimal text in plain SQLite: the whole parts and the fraction parts (scaled to integers of
// COST_SCALE digits, signed like the amount) are summed as 64-bit integers, which SQLite adds exactly, and joined in
// JavaScript. Amounts stay below 10^10 with at most 10 fraction digits (toStoredCost), so a sum of a billion rows fits.
const FRACTION_UNIT = new MoneyDecimal(10).pow(COST_SCALE);
const ZEROS = '0'.repeat(COST_SCALE);

/** '-12.5' → -12 (CAST keeps the longest integer prefix). */
function wholePart(column: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`cast(${column} as integer)`;
}

/** '-12.5' → -5000000000: the fraction digits padded to COST_SCALE, with the amount's sign. */
function fractionPart(column: RawBuilder<unknown>): RawBuilder<number> {
  const digits = sql`substr(substr(${column}, instr(${column}, '.') + 1) || ${sql.lit(ZEROS)}, 1, ${sql.lit(COST_SCALE)})`;
  return sql<number>`case when instr(${column}, '.') = 0 then 0 when ${column} like '-%' then -cast(${digits} as integer) else cast(${digits} as integer) end`;
}
