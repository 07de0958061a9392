import { Decimal } from 'decimal.js';
import { StoreError } from '../domain/errors.js';

/** Fraction digits kept for money; matches `numeric(20, 10)` on PostgreSQL. */
export const COST_SCALE = 10;

// Enough significant digits for any sum of two numeric(20, 10) values; rounding mode matches PostgreSQL's numeric
// (half away from zero), so SQLite and PostgreSQL store the same digits.
const Dec = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP });
const LIMIT = new Dec(10).pow(20 - COST_SCALE);
const PLAIN_DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;
// Already canonical: no leading zeros, no trailing fraction zeros, no "-0". What SQLite hands back is always this.
const CANONICAL = /^(0|-?[1-9]\d*(\.\d*[1-9])?|-?0\.\d*[1-9])$/;
// Canonical, below 10^10 and at most 10 fraction digits: such an amount is stored exactly as given (the common case of
// a price computed by the billing code), so it skips decimal arithmetic.
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
  const amount = new Dec(value.trim()).toDecimalPlaces(COST_SCALE);
  if (amount.abs().gte(LIMIT)) {
    throw new StoreError('invalid_decimal', `${field} ${value} is out of range: amounts must stay below 10^${20 - COST_SCALE}.`);
  }
  return canonical(amount);
}

/** Canonical form of a decimal read back from either back end ("0.0001500000" from pg becomes "0.00015"). */
export function fromStoredCost(value: string | number): string {
  if (typeof value === 'string' && CANONICAL.test(value)) return value;
  return canonical(new Dec(value));
}

/** Exact sum of two stored amounts, in canonical form. */
export function addCosts(a: string, b: string): string {
  if (b === '0' && CANONICAL.test(a)) return a;
  return canonical(new Dec(a).plus(b));
}

/** True when the amount is zero. */
export function isZeroCost(value: string): boolean {
  return new Dec(value).isZero();
}

function canonical(amount: Decimal): string {
  return amount.isZero() ? '0' : amount.toFixed();
}
