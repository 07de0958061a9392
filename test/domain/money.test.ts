import { describe, expect, it } from 'vitest';
import { StoreError } from '../../src/domain/errors.js';
import { addCosts, compareCosts, convertCost, costOf, fromStoredCost, isZeroCost, roundBilled, sumCosts, toStoredCost } from '../../src/domain/money.js';

/** The StoreError a call throws, so a test can check its code and what it tells the caller. */
function storeErrorOf(call: () => unknown): StoreError {
  try {
    call();
  } catch (error) {
    if (error instanceof StoreError) return error;
    throw error;
  }
  throw new Error('expected a StoreError, nothing was thrown');
}

describe('amounts a caller hands in (toStoredCost)', () => {
  it('keeps a canonical amount as given', () => {
    for (const amount of ['0', '12', '-3.5', '0.00015', '9999999999.9999999999']) expect(toStoredCost(amount)).toBe(amount);
  });

  it('writes any other plain decimal in canonical form, so equal amounts are stored alike', () => {
    expect(toStoredCost('1.50')).toBe('1.5');
    expect(toStoredCost('007')).toBe('7');
    expect(toStoredCost('+2')).toBe('2');
    expect(toStoredCost('.5')).toBe('0.5');
    expect(toStoredCost('5.')).toBe('5');
    expect(toStoredCost(' 3.25 ')).toBe('3.25');
    expect(toStoredCost('-0')).toBe('0');
    expect(toStoredCost('-0.000')).toBe('0');
  });

  it('rounds to 10 fraction digits half away from zero, as PostgreSQL stores numeric(20, 10)', () => {
    expect(toStoredCost('0.00000000005')).toBe('0.0000000001');
    expect(toStoredCost('-0.00000000005')).toBe('-0.0000000001');
    expect(toStoredCost('0.00000000004999')).toBe('0');
    expect(toStoredCost('1.23456789012345')).toBe('1.2345678901');
  });

  it('refuses what is not a plain decimal, naming the field and the value', () => {
    for (const bad of ['', ' ', 'abc', '1e3', 'NaN', 'Infinity', '1,5', '0x10', '1.2.3', '--1']) {
      const error = storeErrorOf(() => toStoredCost(bad, 'price'));
      expect(error.code).toBe('invalid_decimal');
      expect(error.message).toBe(`price must be a decimal string such as "0.00015", got ${JSON.stringify(bad)}.`);
    }
    // A number from untyped JavaScript is refused too: floats never become money.
    expect(storeErrorOf(() => toStoredCost(0.1 as unknown as string)).message).toBe('cost must be a decimal string such as "0.00015", got 0.1.');
  });

  it('refuses amounts of 10^10 and more in magnitude, also when rounding reaches it', () => {
    for (const big of ['10000000000', '-10000000000', '9999999999.99999999995', '12345678901.5']) {
      const error = storeErrorOf(() => toStoredCost(big, 'spent'));
      expect(error.code).toBe('invalid_decimal');
      expect(error.message).toBe(`spent ${big} is out of range: amounts must stay below 10^10.`);
    }
    expect(toStoredCost('-9999999999.9999999999')).toBe('-9999999999.9999999999');
  });
});

describe('amounts read back from a database (fromStoredCost)', () => {
  it('drops the padding PostgreSQL and MySQL add, and reads numbers exactly', () => {
    expect(fromStoredCost('0.0001500000')).toBe('0.00015');
    expect(fromStoredCost('12.0000000000')).toBe('12');
    expect(fromStoredCost('0.0000000000')).toBe('0');
    expect(fromStoredCost('-0')).toBe('0');
    expect(fromStoredCost('-2.50')).toBe('-2.5');
    expect(fromStoredCost(0.25)).toBe('0.25');
    expect(fromStoredCost(0)).toBe('0');
    expect(fromStoredCost('0.00015')).toBe('0.00015');
  });
});

describe('arithmetic on amounts', () => {
  it('adds exactly, where floats would not', () => {
    expect(addCosts('0.1', '0.2')).toBe('0.3');
    expect(addCosts('1.5', '0')).toBe('1.5');
    expect(addCosts('1.50', '0')).toBe('1.5');
    expect(addCosts('0', '2.25')).toBe('2.25');
    expect(addCosts('-1', '1')).toBe('0');
    expect(sumCosts([])).toBe('0');
    expect(sumCosts(['0', '0'])).toBe('0');
    expect(sumCosts(['0.1', '0.2', '0.3'])).toBe('0.6');
    expect(sumCosts(['0', '0.00015'])).toBe('0.00015');
    expect(sumCosts(['1', '-1'])).toBe('0');
  });

  it('tells zero from the smallest amount', () => {
    expect(isZeroCost('0')).toBe(true);
    expect(isZeroCost('0.0000000000')).toBe(true);
    expect(isZeroCost('-0')).toBe(true);
    expect(isZeroCost('0.0000000001')).toBe(false);
    expect(isZeroCost('-0.0000000001')).toBe(false);
  });

  it('compares by value, not as text', () => {
    expect(compareCosts('0.1', '0.10')).toBe(0);
    expect(compareCosts('2', '10')).toBeLessThan(0);
    expect(compareCosts('10', '9.99')).toBeGreaterThan(0);
    expect(compareCosts('-1', '0')).toBeLessThan(0);
  });
});

describe('prices and currencies', () => {
  it('costs output tokens at the output price and clamps cached tokens to the input', () => {
    const prices = { input: '2.5', cachedInput: '1.25', output: '10' };
    // (600 × 2.5 + 400 × 1.25 + 200 × 10) / 10^6
    expect(costOf(prices, { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 200 })).toBe('0.004');
    // More cached tokens than input tokens (a provider's rounding): all input at the cached price, never a negative count.
    expect(costOf(prices, { inputTokens: 1000, cachedInputTokens: 5000, outputTokens: 0 })).toBe('0.00125');
    expect(costOf(prices, { inputTokens: 0, outputTokens: 3 })).toBe('0.00003');
  });

  it('converts in both directions through USD, and refuses a currency without a rate', () => {
    const rates = { EUR: '0.8', GBP: '0.5' };
    expect(convertCost('10', 'USD', 'EUR', rates)).toBe('8');
    expect(convertCost('8', 'EUR', 'USD', rates)).toBe('10');
    expect(convertCost('8', 'EUR', 'GBP', rates)).toBe('5');
    expect(convertCost('0', 'EUR', 'XYZ', rates)).toBe('0');
    expect(() => convertCost('1', 'USD', 'XYZ', rates)).toThrow(new RangeError('No USD rate for XYZ'));
    expect(() => convertCost('1', 'XYZ', 'USD', rates)).toThrow(new RangeError('No USD rate for XYZ'));
  });

  it('rounds a billed amount half away from zero, also below zero (a refund)', () => {
    expect(roundBilled('0')).toBe('0');
    expect(roundBilled('-0.0000005')).toBe('-0.000001');
    expect(roundBilled('-0.0000004')).toBe('0');
    expect(roundBilled('2.5000000')).toBe('2.5');
  });
});
