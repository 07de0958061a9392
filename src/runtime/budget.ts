import { COST_SCALE, MoneyDecimal } from '../domain/money.js';
import type { BudgetCaps, SpendCap, Store } from '../domain/ports/store.js';
import type { Billing } from './billing.js';
import type { ModelInvocation } from './call-wrappers.js';
import { BUDGETED_MAX_OUTPUT_TOKENS, type BudgetSettings } from './budget-settings.js';
import { promptTokensAtMost } from './prompt-bound.js';
import type { TurnDependencies, TurnScope } from './turn/turn-context.js';

export type BudgetKind = SpendCap;

/**
 * A model call refused because it could cross a spend cap: the call is not made, and the turn tells the person
 * (with what it spent so far recorded as usual).
 */
export class BudgetExceeded extends Error {
  override readonly name = 'BudgetExceeded';
  readonly budget: BudgetKind;

  constructor(budget: BudgetKind, committed: string, cap: string, currency: string) {
    super(`Budget ${budget} reached: ${committed} of ${cap} ${currency} spent or reserved`);
    this.budget = budget;
  }
}

/**
 * A turn's claim on its user's budget of the day (and its session's), kept exact under concurrency: before each model
 * call it reserves, in one atomic store step, what the turn spent so far plus the most the call (and any other call
 * of the turn still running) can cost — its prompt's tokens counted from above, times the input price, plus the
 * model's `maxOutputTokens` (sent to the endpoint, so it cannot write more) times the output price. The store refuses
 * when the day's spend, the other turns' live claims and this one would pass a cap; then the call is not made
 * ({@link BudgetExceeded}). The turn's closing transaction replaces the claim with what the turn really cost
 * ({@link settleBudget}).
 *
 * So however many turns of a person run at once, on however many processes, the spend of a day stays at most the cap,
 * with one exception written down in docs/costs.md: a process paused for longer than a lease (its claims lapse) that
 * then finishes the call it was making.
 */
export class TurnBudget {
  readonly #scope: TurnScope;
  readonly #settings: BudgetSettings;
  /** What the calls running now may cost at most, each in the budget's currency. */
  readonly #running = new Set<{ readonly most: string }>();

  constructor(scope: TurnScope, settings: BudgetSettings) {
    this.#scope = scope;
    this.#settings = settings;
  }

  /**
   * Reserves for one model call; returns what to call when it is over (the claim stays: the call's real cost is now
   * in the turn's spend, which the next reservation and the closing transaction count).
   *
   * @param chainTokens tokens a Responses chain adds to the prompt beyond the request (its earlier items).
   * @throws BudgetExceeded when the call could cross a cap.
   */
  async beforeCall(invocation: ModelInvocation, chainTokens: number): Promise<() => void> {
    const call = { most: await mostCostOf(this.#scope.deps.billing, invocation, this.#settings.currency, this.#scope.deps.now(), chainTokens) };
    this.#running.add(call);
    try {
      await this.#reserve();
    } catch (error) {
      this.#running.delete(call);
      throw error;
    }
    return () => this.#running.delete(call);
  }

  /** The turn's claim now: spent so far plus what its running calls may cost, at least `reservePerTurn`. */
  async #reserve(): Promise<void> {
    const scope = this.#scope;
    const { billing, store } = scope.deps;
    const settings = this.#settings;
    // Calls billed when the turn stopped to ask for an approval are in the day's spend already.
    const spent = (await billing.usageOf(scope.journal.unbilled(scope.journal.modelCalls), settings.currency, scope.deps.now())).cost;
    const claim = [...this.#running].reduce((total, call) => total.plus(call.most), new MoneyDecimal(spent));
    const amount = MoneyDecimal.max(claim, settings.reservePerTurn ?? 0, SMALLEST_AMOUNT)
      .toDecimalPlaces(COST_SCALE, MoneyDecimal.ROUND_UP)
      .toFixed();
    const outcome = await store.spend.reserve(
      {
        turnId: turnIdOf(scope),
        owner: scope.lease.owner,
        liveWithinMs: scope.lease.leaseMs,
        userId: scope.user.id,
        day: dayIn(scope.timeZone, scope.deps.now()),
        sessionId: scope.session.id,
        amount,
        currency: settings.currency,
      },
      capsOf(settings, billing),
    );
    if (!outcome.reserved) throw new BudgetExceeded(outcome.cap, outcome.committed, settings[outcome.cap]!, settings.currency);
  }
}

/**
 * The most a model call can cost, in `currency`: its prompt's tokens counted from above (plus `chainTokens`, what a
 * Responses chain adds) at the input price, and the model's `maxOutputTokens` (sent to the endpoint, so it cannot
 * write more) at the output price.
 */
export async function mostCostOf(billing: Billing, invocation: ModelInvocation, currency: string, at: Date, chainTokens = 0): Promise<string> {
  const { provider } = invocation;
  const inputTokens = promptTokensAtMost(invocation.request) + chainTokens;
  const outputTokens = provider.maxOutputTokens ?? BUDGETED_MAX_OUTPUT_TOKENS;
  const usd = await billing.usdCostOf(
    { model: provider.model, usage: { inputTokens, outputTokens }, fallback: false, responseId: undefined, path: invocation.path },
    at,
  );
  return billing.convert(usd, 'USD', currency);
}

/** Who makes a model call outside a turn (a conversation's summary), for its budget reservation. */
export interface CallPayer {
  /** The reservation's key: unique to this call (a summary's claim id), never a turn's. */
  readonly reservationId: string;
  /** The process making the call, and how long its heartbeat may be silent before its reservation stops counting. */
  readonly owner: string;
  readonly liveWithinMs: number;
  readonly userId: string;
  readonly sessionId: string;
  /** The person's zone: their budget's day. */
  readonly timeZone: string;
}

/**
 * Reserves what a model call outside a turn may cost at most against the user's and the session's caps, as a turn's
 * calls reserve (one atomic store step). Settled by {@link settleCall} in the transaction that records its cost.
 * @throws BudgetExceeded when the call could cross a cap: then it must not be made.
 */
export async function reserveCall(
  deps: Pick<TurnDependencies, 'billing' | 'store' | 'now'>,
  settings: BudgetSettings,
  payer: CallPayer,
  invocation: ModelInvocation,
): Promise<void> {
  const most = await mostCostOf(deps.billing, invocation, settings.currency, deps.now());
  const amount = MoneyDecimal.max(most, SMALLEST_AMOUNT).toDecimalPlaces(COST_SCALE, MoneyDecimal.ROUND_UP).toFixed();
  const outcome = await deps.store.spend.reserve(
    {
      turnId: payer.reservationId,
      owner: payer.owner,
      liveWithinMs: payer.liveWithinMs,
      userId: payer.userId,
      day: dayIn(payer.timeZone, deps.now()),
      sessionId: payer.sessionId,
      amount,
      currency: settings.currency,
    },
    capsOf(settings, deps.billing),
  );
  if (!outcome.reserved) throw new BudgetExceeded(outcome.cap, outcome.committed, settings[outcome.cap]!, settings.currency);
}

/**
 * Records what a model call outside a turn cost, in `tx` (the transaction that stores its result): the session's
 * totals, the user's spend of the day while a daily cap is configured, and its reservation goes.
 */
export async function settleCall(
  deps: Pick<TurnDependencies, 'budgets' | 'now'>,
  tx: Store,
  payer: CallPayer,
  usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: string; readonly currency: string },
): Promise<void> {
  await tx.sessions.addUsage(payer.sessionId, usage);
  const { budgets } = deps;
  if (budgets === undefined) return;
  await tx.spend.release(payer.reservationId, payer.owner);
  if (budgets.perUserPerDay === undefined || usage.cost === '0') return;
  await tx.spend.addDaily(payer.userId, dayIn(payer.timeZone, deps.now()), usage.cost, usage.currency);
}

/** The configured caps in their currency, for the store's reservation check. */
function capsOf(settings: BudgetSettings, billing: Billing): BudgetCaps {
  return {
    ...(settings.perUserPerDay === undefined ? {} : { perUserPerDay: settings.perUserPerDay }),
    ...(settings.perSession === undefined ? {} : { perSession: settings.perSession }),
    inCapCurrency: (value, from) => billing.convert(value, from, settings.currency),
  };
}

/**
 * Settles the turn's reservation in its closing transaction: the reservation goes, and the real cost joins the user's
 * spend of the day while a daily cap is configured (the session's spend is the session's own total).
 */
export async function settleBudget(scope: TurnScope, tx: Store, cost: string): Promise<void> {
  const { budgets } = scope.deps;
  if (budgets === undefined) return;
  await tx.spend.release(turnIdOf(scope), scope.lease.owner);
  if (budgets.perUserPerDay === undefined || cost === '0') return;
  await tx.spend.addDaily(scope.user.id, dayIn(scope.timeZone, scope.deps.now()), cost, scope.currency);
}

/**
 * A turn that ends without its closing transaction (another process took its conversation over, or the store
 * failed): what it paid for and did not keep in its journal (`lostCost`, calls the next run will make again) still
 * counts against the caps, and its claim goes, in one transaction that no fence stops.
 */
export async function settleAbandonedTurn(scope: TurnScope, lostCost: string): Promise<void> {
  const { budgets, store } = scope.deps;
  if (budgets === undefined && lostCost === '0') return;
  await store.transaction(async (tx) => {
    if (budgets !== undefined) await tx.spend.release(turnIdOf(scope), scope.lease.owner);
    if (lostCost === '0') return;
    await tx.sessions.addUsage(scope.session.id, { inputTokens: 0, outputTokens: 0, cost: lostCost, currency: scope.currency });
    if (budgets?.perUserPerDay !== undefined) await tx.spend.addDaily(scope.user.id, dayIn(scope.timeZone, scope.deps.now()), lostCost, scope.currency);
  });
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
