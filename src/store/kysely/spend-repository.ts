import { addCosts, toStoredCost, fromStoredCost } from '../../domain/money.js';
import type { BudgetCaps, BudgetReservation, DailySpend, ReservationOutcome, SpendRepository } from '../../domain/ports/store.js';
import { releaseReservation, reserveAgainstCaps } from './budget-reservations.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import { storeOperation } from './store-errors.js';

/**
 * Per-user daily spend: running totals kept beside the session totals while a daily budget is configured, and the
 * reservations of the turns running meanwhile.
 */
export class KyselySpendRepository implements SpendRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  addDaily(userId: string, day: string, cost: string, currency: string): Promise<void> {
    return storeOperation('spend.addDaily', async () => {
      const amount = toStoredCost(cost);
      if (amount === '0') return;
      const { costSql } = this.#ctx;
      await atomically(this.#ctx.db, async (db) => {
        const key = (query: any) => query.where('user_id', '=', userId).where('day', '=', day).where('currency', '=', currency);
        const add = async (): Promise<boolean> => {
          if (costSql !== undefined) {
            const result = await key(db.updateTable('daily_spend').set({ cost: costSql.add(amount) })).executeTakeFirst();
            return result.numUpdatedRows > 0n;
          }
          // A SQLite that cannot sum decimals in SQL: read, add exactly here, write (one writer at a time).
          const row = await key(db.selectFrom('daily_spend').select('cost')).executeTakeFirst();
          if (row === undefined) return false;
          await key(db.updateTable('daily_spend').set({ cost: addCosts(fromStoredCost(row.cost), amount) })).execute();
          return true;
        };
        if (await add()) return;
        const inserted = await this.#ctx.dialect
          .insertOrIgnore(db.insertInto('daily_spend').values({ user_id: userId, day, currency, cost: amount }), ['user_id', 'day', 'currency'])
          .executeTakeFirst();
        // Inserted concurrently by another turn of the same user between our update and our insert.
        if (inserted.numInsertedOrUpdatedRows === 0n) await add();
      });
    });
  }

  reserve(reservation: BudgetReservation, caps: BudgetCaps): Promise<ReservationOutcome> {
    return storeOperation('spend.reserve', () => reserveAgainstCaps(this.#ctx, reservation, caps));
  }

  release(turnId: string, owner: string): Promise<void> {
    return storeOperation('spend.release', () => releaseReservation(this.#ctx.db, turnId, owner));
  }

  daily(userId: string, day: string): Promise<DailySpend[]> {
    return storeOperation('spend.daily', async () => {
      const rows = await this.#ctx.db
        .selectFrom('daily_spend')
        .select(['currency', 'cost'])
        .where('user_id', '=', userId)
        .where('day', '=', day)
        .orderBy('currency')
        .execute();
      return rows.map((row) => ({ currency: row.currency, cost: fromStoredCost(row.cost) }));
    });
  }
}
