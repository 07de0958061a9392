import { COST_SCALE, MoneyDecimal } from '../domain/money.js';
import type { SpendCap, Store } from '../domain/ports/store.js';
import type { TurnScope } from './turn-context.js';

/** Spend caps (config `budgets`), in `currency`. */
export interface BudgetSettings {
  /** Per user and calendar day in the user's time zone. */
  readonly perUserPerDay?: string;
  readonly perSession?: string;
  /**
   * What a turn reserves against the caps before its first model call; default a twentieth of the smallest cap
   * ({@link reservationOf}).
   */
  readonly reservePerTurn?: string;
  readonly currency: string;
}

export type BudgetKind = SpendCap;

/** A turn refused at its start because a spend cap is reached: the turn tells the person and calls no model. */
export class BudgetExceeded extends Error {
  override readonly name = 'BudgetExceeded';
  readonly budget: BudgetKind;

  constructor(budget: BudgetKind, committed: string, cap: string, currency: string) {
    super(`Budget ${budget} reached: ${committed} of ${cap} ${currency} spent or reserved`);
    this.budget = budget;
  }
}

/**
 * Reserves the turn's expected cost against the caps, before its first model call, in one atomic store operation:
 * refused when what the user spent today (or the session spent), plus what turns running meanwhile reserved, plus
 * this reservation would exceed a cap. A turn that starts is never stopped half-way (the person would have paid for
 * nothing); its real cost replaces the reservation when it closes ({@link settleBudget}).
 *
 * So a user's spend of a day stays at most the cap plus, for the turns admitted while others ran, what each cost
 * above its reservation; with `reservePerTurn` at or above a turn's real cost, at most the cap. Without budgets this
 * does nothing.
 *
 * @throws BudgetExceeded naming the cap reached.
 */
export async function reserveBudget(scope: TurnScope): Promise<void> {
  const { budgets, billing, store } = scope.deps;
  if (budgets === undefined) return;
  const outcome = await store.spend.reserve(
    {
      turnId: turnIdOf(scope),
      owner: scope.lease.owner,
      userId: scope.user.id,
      day: dayIn(scope.timeZone, scope.deps.now()),
      sessionId: scope.session.id,
      amount: reservationOf(budgets),
      currency: budgets.currency,
    },
    {
      ...(budgets.perUserPerDay === undefined ? {} : { perUserPerDay: budgets.perUserPerDay }),
      ...(budgets.perSession === undefined ? {} : { perSession: budgets.perSession }),
      inCapCurrency: (amount, currency) => billing.convert(amount, currency, budgets.currency),
    },
  );
  if (!outcome.reserved) throw new BudgetExceeded(outcome.cap, outcome.committed, budgets[outcome.cap]!, budgets.currency);
}

/**
 * Settles the turn's reservation in its closing transaction: the reservation goes, and the real cost joins the user's
 * spend of the day while a daily cap is configured (the session's spend is the session's own total).
 */
export async function settleBudget(scope: TurnScope, tx: Store, cost: string): Promise<void> {
  const { budgets } = scope.deps;
  if (budgets === undefined) return;
  await tx.spend.release(turnIdOf(scope));
  if (budgets.perUserPerDay === undefined || cost === '0') return;
  await tx.spend.addDaily(scope.user.id, dayIn(scope.timeZone, scope.deps.now()), cost, scope.currency);
}

/**
 * What a turn reserves: `reservePerTurn`, else a twentieth of the smallest cap — up to twenty turns of one user may
 * then run at once, and the last twentieth of a cap is left unstarted rather than overspent. Never zero: a turn must
 * claim something, or a cap already reached (a cap of 0 too) would still admit turns.
 */
export function reservationOf(budgets: BudgetSettings): string {
  const caps = [budgets.perUserPerDay, budgets.perSession].filter((cap): cap is string => cap !== undefined);
  const amount = budgets.reservePerTurn ?? MoneyDecimal.min(...caps).div(20);
  return MoneyDecimal.max(amount, SMALLEST_AMOUNT).toDecimalPlaces(COST_SCALE, MoneyDecimal.ROUND_UP).toFixed();
}

/** The smallest amount of money the store keeps. */
const SMALLEST_AMOUNT = new MoneyDecimal(10).pow(-COST_SCALE);

/** A turn is known by its first message: the same when it runs again after a failure or a crash. */
function turnIdOf(scope: TurnScope): string {
  return scope.messages[0].inbound.id;
}

const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The calendar day of `at` in `timeZone`, as YYYY-MM-DD. */
export function dayIn(timeZone: string, at: Date): string {
  let format = dayFormats.get(timeZone);
  if (format === undefined) {
    // en-CA writes dates as YYYY-MM-DD.
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(timeZone, format);
  }
  return format.format(at);
}
