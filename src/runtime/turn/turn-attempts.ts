/**
 * How often a message is tried again when its turn could not be stored (a database refusing the row, or down), so
 * that a failure never loops: the attempts are counted in the store (`InboundRecord.attempts`, across restarts), a
 * retry waits longer each time, and after `inbox.maxTurnAttempts` the message is answered with an apology without the
 * model (or, when not even that stores, given up on).
 */

/** Attempts per message unless config says otherwise (`inbox.maxTurnAttempts`). */
export const DEFAULT_MAX_TURN_ATTEMPTS = 3;

/** The longest wait between two attempts: a database that stays down is still tried now and then. */
const MAX_RETRY_DELAY_MS = 10 * 60_000;

/**
 * How long to wait before the attempt after `attempts` failed ones: a third of a lease (how often recovery looks),
 * doubling each time, at most ten minutes.
 */
export function retryDelayMs(leaseMs: number, attempts: number): number {
  const base = Math.max(50, Math.floor(leaseMs / 3));
  return Math.min(MAX_RETRY_DELAY_MS, base * 2 ** Math.max(0, Math.min(attempts - 1, 20)));
}

/** Splits a batch into the messages that may still be answered by the model and those whose attempts are spent. */
export function byAttempts<T extends { readonly inbound: { readonly attempts: number } }>(
  batch: readonly T[],
  maxAttempts: number,
): { readonly due: T[]; readonly exhausted: T[] } {
  return { due: batch.filter((item) => item.inbound.attempts <= maxAttempts), exhausted: batch.filter((item) => item.inbound.attempts > maxAttempts) };
}
