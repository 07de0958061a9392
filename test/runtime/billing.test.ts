import { describe, expect, it } from 'vitest';
import type { TokenUsage } from '../../src/domain/model.js';
import { convertCost, costOf, roundBilled, type ModelPrices } from '../../src/domain/money.js';
import type { ModelCallRecord } from '../../src/domain/ports/flow.js';
import type { PriceLookup } from '../../src/domain/ports/price-table.js';
import { genaiPriceLookup } from '../../src/models/genai-price-lookup.js';
import { silentLogger } from '../../src/observability/logger.js';
import { Billing, type BillingSettings } from '../../src/runtime/billing.js';

/** A price table that counts how often it is asked. */
function countingTable(prices: Record<string, ModelPrices>): PriceLookup & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    pricesOf: async (model) => {
      asked.push(model);
      return prices[model];
    },
  };
}

const call = (model: string, usage: TokenUsage): ModelCallRecord => ({ model, usage, fallback: false, responseId: undefined, path: 'direct' });

function billing(settings: Partial<BillingSettings>): Billing {
  return new Billing(
    { overrides: {}, table: undefined, currencyByCountry: { CN: 'CNY' }, defaultCurrency: 'USD', defaultCountry: null, usdRates: { CNY: '7.10' }, ...settings },
    silentLogger(),
  );
}

const AT = new Date('2026-03-01T12:00:00Z');

describe('billing', () => {
  it('never asks the price table for a model with an override, nor for a call without tokens', async () => {
    const table = countingTable({ listed: { input: '1', output: '1' } });
    const bill = billing({ overrides: { mine: { input: '2', output: '4' } }, table });
    // (1000 × 2 + 500 × 4) / 10^6 = 0.004
    expect(await bill.usageOf([call('mine', { inputTokens: 1000, outputTokens: 500 })], 'USD', AT)).toEqual({
      inputTokens: 1000,
      outputTokens: 500,
      cachedInputTokens: 0,
      cost: '0.004',
    });
    expect(await bill.usdCostOf(call('listed', { inputTokens: 0, outputTokens: 0 }), AT)).toBe('0');
    expect(table.asked).toEqual([]);
    expect(await bill.usdCostOf(call('listed', { inputTokens: 10, outputTokens: 0 }), AT)).toBe('0.00001');
    expect(table.asked).toEqual(['listed']);
  });

  it('asks the table about an unknown model once: it costs 0 from then on', async () => {
    const table = countingTable({});
    const bill = billing({ table });
    for (let index = 0; index < 3; index += 1) expect(await bill.usdCostOf(call('unknown', { inputTokens: 10, outputTokens: 10 }), AT)).toBe('0');
    expect(table.asked).toEqual(['unknown']);
  });

  it('prices a call once, however often its cost is asked for', async () => {
    const table = countingTable({ listed: { input: '1', output: '1' } });
    const bill = billing({ table });
    const record = call('listed', { inputTokens: 10, outputTokens: 10 });
    await bill.usageOf([record], 'USD', AT);
    await bill.usageOf([record], 'CNY', AT);
    expect(table.asked).toEqual(['listed']);
  });

  it('bills a country by its currency, others in the default one', () => {
    const bill = billing({});
    expect([bill.currencyOf('CN'), bill.currencyOf('US'), bill.currencyOf(null)]).toEqual(['CNY', 'USD', 'USD']);
  });

  it('converts through USD exactly and rounds a message half-up to 6 places', () => {
    const rates = { CNY: '7.10', EUR: '0.92' };
    expect(convertCost('0.0000005', 'USD', 'CNY', rates)).toBe('0.00000355');
    expect(roundBilled('0.0000005')).toBe('0.000001');
    expect(roundBilled('0.0000004999')).toBe('0');
    expect(roundBilled('1.2345675')).toBe('1.234568');
    // 7.10 CNY → 1 USD → 0.92 EUR, no float on the way.
    expect(convertCost('7.1', 'CNY', 'EUR', rates)).toBe('0.92');
    expect(convertCost('0.3', 'USD', 'USD', rates)).toBe('0.3');
  });

  it('prices cached input tokens within the input, at their own price or the input price', () => {
    const usage = { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 100 };
    // (600 × 0.15 + 400 × 0.075 + 100 × 0.6) / 10^6 = 0.00018
    expect(costOf({ input: '0.15', cachedInput: '0.075', output: '0.6' }, usage)).toBe('0.00018');
    // (1000 × 0.15 + 100 × 0.6) / 10^6 = 0.00021
    expect(costOf({ input: '0.15', output: '0.6' }, usage)).toBe('0.00021');
  });
});

describe('the genai-prices table', () => {
  const table = genaiPriceLookup();

  it('gives the published prices of a model as the decimals they were written as', async () => {
    expect(await table.pricesOf('gpt-4o-mini', { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 100 }, AT)).toEqual({
      input: '0.15',
      cachedInput: '0.075',
      output: '0.6',
    });
    expect(await table.pricesOf('no-such-model-anywhere', { inputTokens: 1, outputTokens: 1 }, AT)).toBeUndefined();
  });

  it('takes a tiered price by the size of the input, as the library computes it', async () => {
    // gemini-2.5-pro costs more above 200,000 input tokens: all tokens at the higher rate.
    const short = await table.pricesOf('gemini-2.5-pro', { inputTokens: 1000, outputTokens: 1 }, AT);
    const long = await table.pricesOf('gemini-2.5-pro', { inputTokens: 300_000, outputTokens: 1 }, AT);
    expect(short).toEqual({ input: '1.25', cachedInput: '0.125', output: '10' });
    expect(long).toEqual({ input: '2.5', cachedInput: '0.25', output: '15' });
    // (300000 × 2.5 + 1 × 15) / 10^6 = 0.750015, the library's own total.
    expect(costOf(long!, { inputTokens: 300_000, outputTokens: 1 })).toBe('0.750015');
  });
});
