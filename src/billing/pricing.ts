import { Decimal } from 'decimal.js';
import type { TokenUsage } from '../domain/model.js';

/** Prices per million tokens, as decimal strings, keyed by model name. */
export type PriceTable = Readonly<Record<string, { readonly input: string; readonly output: string }>>;

const MILLION = new Decimal(1_000_000);

/** Cost of `usage` on `model` as a decimal string; "0" when the model has no price. */
export function costOf(prices: PriceTable, model: string, usage: TokenUsage): string {
  const price = prices[model];
  if (!price) return '0';
  return new Decimal(price.input).mul(usage.inputTokens).plus(new Decimal(price.output).mul(usage.outputTokens)).div(MILLION).toFixed();
}

/** Adds decimal strings exactly. */
export function sumCosts(costs: readonly string[]): string {
  // Most agents run unpriced models: skip the decimal arithmetic when there is nothing to add.
  if (costs.every((cost) => cost === '0')) return '0';
  return costs.reduce((total, cost) => total.plus(cost), new Decimal(0)).toFixed();
}
