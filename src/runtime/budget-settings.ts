/**
 * Spend caps (config `budgets`), in `currency`. A turn's dependencies carry them, so they live apart from budget.ts,
 * which works on a running turn.
 */
export interface BudgetSettings {
  /** Per user and calendar day in the user's time zone. */
  readonly perUserPerDay?: string;
  readonly perSession?: string;
  /**
   * The least a running turn holds against the caps, whatever its model calls reserve (a floor for turns that also
   * spend elsewhere); by default a turn holds only what its calls can cost (`TurnBudget`, budget.ts).
   */
  readonly reservePerTurn?: string;
  readonly currency: string;
}

/** What a model call may write at most when budgets are on and `model.maxOutputTokens` is not set. */
export const BUDGETED_MAX_OUTPUT_TOKENS = 4096;
