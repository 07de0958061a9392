import type { DeliveryRecord } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';
import type { TurnDependencies } from './turn/turn-context.js';

/**
 * The longest wait taken at once. The number comes from a messenger (untrusted); a part whose channel still asks to
 * wait when this ends is simply postponed again, so capping it loses nothing.
 */
const MAX_POSTPONEMENT_MS = 24 * 60 * 60 * 1000;

/** A channel's asked-for wait, made safe to store: a finite number of ms within a day, 0 for nonsense. */
export function postponementMs(retryAfterMs: number): number {
  return Number.isFinite(retryAfterMs) ? Math.min(Math.max(0, Math.ceil(retryAfterMs)), MAX_POSTPONEMENT_MS) : 0;
}

/**
 * Leaves reply parts in the outbox until `delayMs` from now (the channel asked to wait, or earlier parts of the
 * conversation wait): still pending, leased to nobody, taken by the next recovery round after their time, in order.
 * Never throws: if the store cannot record it the parts stay leased to this process, and are sent after it stops.
 */
export async function postponeParts(
  deps: Pick<TurnDependencies, 'store' | 'metrics'>,
  log: Logger,
  parts: readonly DeliveryRecord[],
  delayMs: number,
  why: string,
): Promise<void> {
  if (parts.length === 0) return;
  const retryAfterMs = postponementMs(delayMs);
  const channel = parts[0]!.channel;
  try {
    await deps.store.deliveries.postpone(
      parts.map((part) => part.id),
      retryAfterMs,
    );
  } catch (error) {
    log.error({ err: error, channel, parts: parts.length }, 'could not postpone reply parts; they are sent after this process stops');
    return;
  }
  deps.metrics.replyPartsPostponed.inc({ channel }, parts.length);
  log.warn(
    { channel, retryAfterMs, parts: parts.map((part) => part.part), replies: new Set(parts.map((part) => part.replyMessageId)).size },
    `${why}; reply parts stay in the outbox`,
  );
}
