import { StoreError } from '../../domain/errors.js';
import type { SessionStatus, TokenUsage } from '../../domain/model.js';
import { toStoredCost } from '../../domain/money.js';

// What a write of a session row sets (its shape) and with which checked values. The dialect strategies take these,
// so they sit below both the strategies and the write itself (session-write.ts).

/** What a write to a session row sets besides `updated_at`: the same for every write of one shape. */
export interface SessionWriteShape {
  /** Sets `status`. */
  readonly status: boolean;
  /** Adds usage (tokens, and cost when `cost`) with the database's exact cost arithmetic in SQL. */
  readonly usage: boolean;
  /**
   * Adds a non-zero cost, under the currency rule. A zero cost (an unpriced model) changes no money, so it is
   * neither summed nor refused for its currency.
   */
  readonly cost: boolean;
}

/** The values of a session write (fields a shape does not use are ignored). */
export interface SessionWriteArgs {
  readonly id: string;
  readonly now: number;
  /** Seqs handed out: `last_seq` grows by this much (0 for none). */
  readonly count: number;
  readonly status: SessionStatus;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens: number;
  /** Canonical decimal text. */
  readonly cost: string;
  readonly currency: string;
}

/** Validated values for {@link SessionWriteArgs}; no usage counts as zero. */
export function sessionWriteArgs(
  id: string,
  now: number,
  count: number,
  status: SessionStatus | undefined,
  usage?: TokenUsage & { readonly cost: string; readonly currency: string },
): SessionWriteArgs {
  return {
    id,
    now,
    count,
    status: status ?? 'pending',
    inputTokens: usage === undefined ? 0 : tokenCount(usage.inputTokens, 'inputTokens'),
    outputTokens: usage === undefined ? 0 : tokenCount(usage.outputTokens, 'outputTokens'),
    cachedInputTokens: usage?.cachedInputTokens === undefined ? 0 : cachedTokenCount(usage),
    cost: usage === undefined || usage.cost === '0' ? '0' : toStoredCost(usage.cost),
    currency: usage?.currency ?? 'USD',
  };
}

/** Cached input tokens are part of the input: never more than it. */
export function cachedTokenCount(usage: TokenUsage): number {
  const cached = tokenCount(usage.cachedInputTokens ?? 0, 'cachedInputTokens');
  if (cached > usage.inputTokens)
    throw new StoreError(
      'invalid_usage',
      `cachedInputTokens (${cached}) cannot exceed inputTokens (${usage.inputTokens}): cached tokens are counted within the input.`,
    );
  return cached;
}

function tokenCount(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StoreError('invalid_usage', `${field} must be a non-negative integer, got ${value}.`);
  }
  return value;
}
