import { compareCosts, sumCosts } from '../domain/money.js';
import type { Store } from '../domain/ports/store.js';
import type { TurnScope } from './turn-context.js';

/** Spend caps (config `budgets`), in `currency`. */
export interface BudgetSettings {
  /** Per user and calendar day in the user's time zone. */
  readonly perUserPerDay?: string;
  readonly perSession?: string;
  readonly currency: string;
}

export type BudgetKind = 'perUserPerDay' | 'perSession';

/** A model call refused because a spend cap is reached: the turn tells the person and calls no model. */
export class BudgetExceeded extends Error {
  override readonly name = 'BudgetExceeded';
  readonly budget: BudgetKind;

  constructor(budget: BudgetKind, spent: string, cap: string, currency: string) {
    super(`Budget ${budget} reached: ${spent} of ${cap} ${currency} spent`);
    this.budget = budget;
  }
}

/** What was spent before this turn, in the budget currency: read once per turn, at its first model call. */
interface Baseline {
  readonly session: string;
  readonly day: string;
}

const baselines = new WeakMap<TurnScope, Promise<Baseline>>();

/**
 * Refuses the next model call when a cap is reached: what the session (or the user today) spent before this turn
 * plus what this turn's calls cost so far. A call that is allowed may end above the cap; the next one is refused.
 * Without budgets this reads nothing.
 *
 * @throws BudgetExceeded naming the cap reached.
 */
export async function checkBudget(scope: TurnScope): Promise<void> {
  const { budgets, billing } = scope.deps;
  if (budgets === undefined) return;
  let baseline = baselines.get(scope);
  if (baseline === undefined) {
    baseline = loadBaseline(scope, budgets);
    baselines.set(scope, baseline);
  }
  const before = await baseline;
  const now = scope.deps.now();
  const thisTurn = scope.journal.modelCalls.length === 0 ? '0' : billing.convert((await billing.usageOf(scope.journal.modelCalls, scope.currency, now)).cost, scope.currency, budgets.currency);
  if (budgets.perSession !== undefined) refuseAbove('perSession', sumCosts([before.session, thisTurn]), budgets.perSession, budgets.currency);
  if (budgets.perUserPerDay !== undefined) refuseAbove('perUserPerDay', sumCosts([before.day, thisTurn]), budgets.perUserPerDay, budgets.currency);
}

/**
 * Keeps the user's spend of the day, in the turn's closing transaction, while a daily cap is configured (then the
 * check is one key read instead of a sum over messages).
 */
export async function recordDailySpend(scope: TurnScope, tx: Store, cost: string): Promise<void> {
  if (scope.deps.budgets?.perUserPerDay === undefined || cost === '0') return;
  await tx.spend.addDaily(scope.user.id, dayIn(scope.timeZone, scope.deps.now()), cost, scope.currency);
}

function refuseAbove(budget: BudgetKind, spent: string, cap: string, currency: string): void {
  if (compareCosts(spent, cap) >= 0) throw new BudgetExceeded(budget, spent, cap, currency);
}

async function loadBaseline(scope: TurnScope, budgets: BudgetSettings): Promise<Baseline> {
  const { store, billing } = scope.deps;
  const [session, day] = await Promise.all([
    budgets.perSession === undefined ? undefined : store.sessions.findById(scope.session.id),
    budgets.perUserPerDay === undefined ? [] : store.spend.daily(scope.user.id, dayIn(scope.timeZone, scope.deps.now())),
  ]);
  return {
    session: session === undefined ? '0' : billing.convert(session.cost, session.currency, budgets.currency),
    day: sumCosts(day.map((spend) => billing.convert(spend.cost, spend.currency, budgets.currency))),
  };
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
