import type { Session } from '../domain/model.js';
import { convertCost, costOf, roundBilled, sumCosts, type PriceTable } from '../domain/money.js';
import type { ModelCallRecord } from '../domain/ports/flow.js';
import type { PriceLookup } from '../domain/ports/price-table.js';
import type { Logger } from '../observability/logger.js';

/** How calls are priced and which currency a user pays in (config `model.prices`, `billing`). */
export interface BillingSettings {
  /** Prices (USD per million tokens) that win over the table, by model name. */
  readonly overrides: PriceTable;
  /** The maintained price table, or undefined when it is off: then only overrides price calls. */
  readonly table: PriceLookup | undefined;
  readonly currencyByCountry: Readonly<Record<string, string>>;
  readonly defaultCurrency: string;
  /** Country of a user whose profile names none. */
  readonly defaultCountry: string | null;
  /** Units of a currency one USD buys; USD itself is 1. */
  readonly usdRates: Readonly<Record<string, string>>;
}

/** Tokens and cost of a message (the model calls of one turn), the cost in the billing currency. */
export interface BilledUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  /** Rounded to 6 places, half-up. */
  readonly cost: string;
}

/**
 * Prices model calls exactly: each call in USD from the config's override or the price table (loaded on the first
 * call that needs it), summed per message, converted into the user's billing currency and rounded there once.
 */
export class Billing {
  readonly #settings: BillingSettings;
  readonly #logger: Logger;
  // A call is priced once, however often the turn asks (storing it again in the session's currency, say).
  readonly #costs = new WeakMap<ModelCallRecord, Promise<string>>();
  readonly #unpriced = new Set<string>();

  constructor(settings: BillingSettings, logger: Logger) {
    this.#settings = settings;
    this.#logger = logger;
  }

  /**
   * The currency a user of `country` (ISO 3166-1 alpha-2, or null when unknown) is billed in. A session that already
   * holds money keeps its currency (the store allows one per session), also after the user's country changed.
   */
  currencyOf(country: string | null, session?: Pick<Session, 'cost' | 'currency'>): string {
    if (session !== undefined && session.cost !== '0') return session.currency;
    return (country === null ? undefined : this.#settings.currencyByCountry[country]) ?? this.#settings.defaultCurrency;
  }

  get defaultCountry(): string | null {
    return this.#settings.defaultCountry;
  }

  /** Converts an amount between two configured currencies, exactly (not rounded). */
  convert(amount: string, from: string, to: string): string {
    return convertCost(amount, from, to, this.#settings.usdRates);
  }

  /** The exact USD cost of one call; "0" for a model with no price (logged once per model). */
  usdCostOf(call: ModelCallRecord, at: Date): Promise<string> {
    let cost = this.#costs.get(call);
    if (cost === undefined) {
      cost = this.#price(call, at);
      this.#costs.set(call, cost);
    }
    return cost;
  }

  /** Tokens and cost of `calls` in `currency`: USD summed exactly, converted, then rounded to 6 places. */
  async usageOf(calls: readonly ModelCallRecord[], currency: string, at: Date): Promise<BilledUsage> {
    const { inputTokens, outputTokens, cachedInputTokens } = tokensOf(calls);
    const usd = sumCosts(await Promise.all(calls.map((call) => this.usdCostOf(call, at))));
    return { inputTokens, outputTokens, cachedInputTokens, cost: roundBilled(this.convert(usd, 'USD', currency)) };
  }

  async #price(call: ModelCallRecord, at: Date): Promise<string> {
    const { usage, model } = call;
    if (usage.inputTokens === 0 && usage.outputTokens === 0) return '0';
    const override = this.#settings.overrides[model];
    if (override !== undefined) return costOf(override, usage);
    // The table does not change while Palaver runs: a model it did not know is not looked up again.
    if (this.#unpriced.has(model)) return '0';
    const { table } = this.#settings;
    const prices = table === undefined ? undefined : await table.pricesOf(model, usage, at);
    if (prices !== undefined) return costOf(prices, usage);
    // Calls of one turn are priced together: only the first to learn the model is unknown says so.
    if (!this.#unpriced.has(model)) {
      this.#unpriced.add(model);
      this.#logger.warn({ model }, 'no price for this model (not in model.prices nor in the price table): its calls cost 0');
    }
    return '0';
  }
}

/** The tokens of `calls`, summed (cached input counted apart, as providers report it). */
export function tokensOf(calls: readonly ModelCallRecord[]): { inputTokens: number; outputTokens: number; cachedInputTokens: number } {
  let inputTokens = 0;
  let outputTokens = 0;
  let cachedInputTokens = 0;
  for (const { usage } of calls) {
    inputTokens += usage.inputTokens;
    outputTokens += usage.outputTokens;
    cachedInputTokens += usage.cachedInputTokens ?? 0;
  }
  return { inputTokens, outputTokens, cachedInputTokens };
}
