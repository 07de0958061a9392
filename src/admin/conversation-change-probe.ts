import type { OperatorQueries } from '../domain/ports/operator-queries.js';
import type { ChangeProbe } from './admin-events.js';

/**
 * What the dashboard's live list watches: the 20 most recently active conversations (their last message, waiting
 * count, pause, end, status, who took it and its open handoff) and the inbox and outbox depth. Two indexed queries with small limits; read from
 * the store, so a message another process accepted or answered shows too.
 *
 * Every open dashboard shares one probe per `ttlMs`: ten tabs cost the store what one does.
 */
export function conversationChangeProbe(operators: OperatorQueries, ttlMs = 500): ChangeProbe {
  const probe = async () => {
    const [page, depth] = await Promise.all([operators.conversations({ limit: 20 }), operators.depth()]);
    const conversations = page.items.map((c) => [
      c.sessionId,
      c.lastMessage?.at.getTime() ?? null,
      c.updatedAt.getTime(),
      c.waiting,
      c.pausedAt?.getTime() ?? null,
      c.endedAt?.getTime() ?? null,
      c.status,
      c.assignedTo,
      c.handoff?.requestedAt.getTime() ?? null,
      c.handoff?.takenBy ?? null,
    ]);
    return JSON.stringify([conversations, depth]);
  };
  return sharedProbe(probe, ttlMs);
}

/** One answer per `ttlMs` for every caller, and never two probes running at once. */
export function sharedProbe(probe: ChangeProbe, ttlMs: number, now: () => number = Date.now): ChangeProbe {
  let last: { readonly value: string; readonly at: number } | undefined;
  let running: Promise<string> | undefined;
  return () => {
    if (last !== undefined && now() - last.at < ttlMs) return Promise.resolve(last.value);
    running ??= probe()
      .then((value) => {
        last = { value, at: now() };
        return value;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
