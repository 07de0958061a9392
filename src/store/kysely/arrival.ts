let lastArrival = 0;

/**
 * Epoch microseconds, strictly increasing in this process: rows written within one millisecond (inbox messages, the
 * audit events of one transaction) keep the order they were written in.
 */
export function nextArrival(nowMs: number): number {
  lastArrival = Math.max(nowMs * 1000, lastArrival + 1);
  return lastArrival;
}
