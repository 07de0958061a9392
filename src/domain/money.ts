import { Decimal } from 'decimal.js';
import { StoreError } from './errors.js';
import type { TokenUsage } from './model.js';

// Money in one place: the decimal settings, the canonical form amounts are stored and compared in, and prices.
// Amounts are decimal strings everywhere ("0.00015"); floats never touch them.

/** Fraction digits kept for money; matches `numeric(20, 10)` on PostgreSQL. */
export const COST_SCALE = 10;

/**
 * The decimal arithmetic of money: enough significant digits for any sum of two numeric(20, 10) values, and
 * PostgreSQL's rounding of numeric (half away from zero), so every back end stores the same digits.
 */
export const MoneyDecimal = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });

const LIMIT = new MoneyDecimal(10).pow(20 - COST_SCALE);
const PLAIN_DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
// Already canonical: no leading zeros, no trailing fraction zeros, no "-0". What SQLite hands back is always this.
const CANONICAL = /^(0|-?[1-9]\d*(\.\d*[1-9])?|-?0\.\d*[1-9])$/;
// Canonical, below 10^10 and at most 10 fraction digits: such an amount is stored exactly as given (the common case of
// a price computed by costOf), so it skips decimal arithmetic.
const STORABLE_AS_IS = /^-?(0|[1-9]\d{0,9})(\.\d{0,9}[1-9])?$/;

/**
 * Validates a money amount from a caller and returns it in canonical form ("0.00015", "12", "-3.5"), rounded to
 * {@link COST_SCALE} places.
 *
 * @throws StoreError `invalid_decimal` for anything but a plain decimal below 10^10 in magnitude.
 */
export function toStoredCost(value: string, field = 'cost'): string {
  if (typeof value === 'string' && STORABLE_AS_IS.test(value) && value !== '-0') return value;
  if (typeof value !== 'string' || !PLAIN_DECIMAL.test(value.trim())) {
    throw new StoreError('invalid_decimal', `${field} must be a decimal string such as "0.00015", got ${JSON.stringify(value)}.`);
  }
  const amount = new MoneyDecimal(value.trim()).toDecimalPlaces(COST_SCALE);
  if (amount.abs().gte(LIMIT)) {
    throw new StoreError('invalid_decimal', `${field} ${value} is out of range: amounts must stay below 10^${20 - COST_SCALE}.`);
  }
  return canonical(amount);
}

/** Canonical form of a decimal read back from a database ("0.0001500000" from PostgreSQL becomes "0.00015"). */
export function fromStoredCost(value: string | number): string {
  if (typeof value === 'string' && CANONICAL.test(value)) return value;
  return canonical(new MoneyDecimal(value));
}

/** Exact sum of two stored amounts, in canonical form. */
export function addCosts(a: string, b: string): string {
  if (b === '0' && CANONICAL.test(a)) return a;
  return canonical(new MoneyDecimal(a).plus(b));
}

/** True when the amount is zero. */
export function isZeroCost(value: string): boolean {
  return new MoneyDecimal(value).isZero();
}

function canonical(amount: Decimal): string {
  return amount.isZero() ? '0' : amount.toFixed();
}

/** Prices of one model in USD per million tokens, as decimal strings; cached input tokens default to `input`. */
export interface ModelPrices {
  readonly input: string;
  readonly output: string;
  readonly cachedInput?: string;
}

/** Prices per million tokens, as decimal strings, keyed by model name. */
export type PriceTable = Readonly<Record<string, ModelPrices>>;

const MILLION = new MoneyDecimal(1_000_000);

/**
 * Cost of `usage` at `prices` as an exact decimal string: cached input tokens (counted within `inputTokens`) at
 * their own price, the rest of the input and the output at theirs.
 */
export function costOf(prices: ModelPrices, usage: TokenUsage): string {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  return new MoneyDecimal(prices.input)
    .mul(usage.inputTokens - cached)
    .plus(new MoneyDecimal(prices.cachedInput ?? prices.input).mul(cached))
    .plus(new MoneyDecimal(prices.output).mul(usage.outputTokens))
    .div(MILLION)
    .toFixed();
}

/** Adds decimal strings exactly. */
export function sumCosts(costs: readonly string[]): string {
  // Most agents run unpriced models: skip the decimal arithmetic when there is nothing to add.
  if (costs.every((cost) => cost === '0')) return '0';
  return canonical(costs.reduce((total, cost) => total.plus(cost), new MoneyDecimal(0)));
}

/** Fraction digits of a message's cost in the billing currency. */
export const BILLED_SCALE = 6;

/**
 * Converts an amount between currencies through USD: `usdRates` says how many units of a currency one USD buys
 * (USD itself is 1). Exact decimal arithmetic; the result is not rounded.
 */
export function convertCost(amount: string, from: string, to: string, usdRates: Readonly<Record<string, string>>): string {
  if (from === to || amount === '0') return amount;
  const rate = (currency: string) => {
    if (currency === 'USD') return new MoneyDecimal(1);
    const value = usdRates[currency];
    if (value === undefined) throw new RangeError(`No USD rate for ${currency}`);
    return new MoneyDecimal(value);
  };
  return canonical(new MoneyDecimal(amount).div(rate(from)).mul(rate(to)));
}

/** Rounds an amount to {@link BILLED_SCALE} places, half-up (away from zero), in canonical form. */
export function roundBilled(amount: string): string {
  if (amount === '0') return amount;
  return canonical(new MoneyDecimal(amount).toDecimalPlaces(BILLED_SCALE, MoneyDecimal.ROUND_HALF_UP));
}

/** Compares two amounts: negative, zero or positive as `a` is below, equal to or above `b`. */
export function compareCosts(a: string, b: string): number {
  return new MoneyDecimal(a).comparedTo(b);
}
