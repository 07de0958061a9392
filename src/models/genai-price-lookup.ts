import type { TokenUsage } from '../domain/model.js';
import { MoneyDecimal, type ModelPrices } from '../domain/money.js';
import type { PriceLookup } from '../domain/ports/price-table.js';

import type { ModelPrice } from '@pydantic/genai-prices';

type GenaiPrices = typeof import('@pydantic/genai-prices');
type TableValue = ModelPrice[string];

// ~16 MB of price data: loaded by the first model call that needs the table, never at start.
let loaded: Promise<GenaiPrices> | undefined;

/**
 * The maintained price table of `@pydantic/genai-prices`, as bundled with the installed version (no network). Its
 * prices are JavaScript numbers per million tokens; each becomes the decimal it was written as ("0.15"), and all
 * arithmetic on it is decimal.
 */
export function genaiPriceLookup(): PriceLookup {
  return {
    async pricesOf(model: string, usage: TokenUsage, at: Date): Promise<ModelPrices | undefined> {
      const { calcPrice } = await (loaded ??= import('@pydantic/genai-prices'));
      const found = calcPrice({ input_tokens: usage.inputTokens, cache_read_tokens: usage.cachedInputTokens ?? 0, output_tokens: usage.outputTokens }, model, {
        timestamp: at,
      });
      if (found === null) return undefined;
      const prices = found.model_price;
      const input = decimal(prices['input_mtok'], usage.inputTokens);
      const cachedInput = prices['cache_read_mtok'] === undefined ? undefined : decimal(prices['cache_read_mtok'], usage.inputTokens);
      return { input, output: decimal(prices['output_mtok'], usage.inputTokens), ...(cachedInput === undefined ? {} : { cachedInput }) };
    },
  };
}

/**
 * A table price as a decimal string. A tiered price (long prompts cost more) takes the rate of the highest tier whose
 * start the call's input tokens exceed, as the table's own calculation does.
 */
function decimal(value: TableValue | undefined, inputTokens: number): string {
  if (value === undefined) return '0';
  if (typeof value === 'number') return new MoneyDecimal(value).toFixed();
  let rate = value.base;
  for (const tier of value.tiers) if (inputTokens > tier.start) rate = tier.price;
  return new MoneyDecimal(rate).toFixed();
}
