import type { TokenUsage } from '../model.js';
import type { ModelPrices } from '../money.js';

/**
 * A maintained table of model prices (e.g. `@pydantic/genai-prices`), in USD per million tokens. An adapter may load
 * its data on first use; `pricesOf` is then asked once per priced model call.
 */
export interface PriceLookup {
  /**
   * The prices of `model` for a call of `usage` made at `at` (a table may price by date or by the size of the
   * input), or undefined when the table does not know the model.
   */
  pricesOf(model: string, usage: TokenUsage, at: Date): Promise<ModelPrices | undefined>;
}
