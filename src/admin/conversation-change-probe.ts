import type { OperatorQueries } from '../domain/ports/operator-queries.js';
import type { ApprovalRepository, HandoffRepository } from '../domain/ports/store.js';
import type { ChangeProbe } from './admin-events.js';

/** Open handoffs the probe watches; more than this many waiting is a queue the page shows as such anyway. */
const WATCHED_HANDOFFS = 100;
/** Pending approval requests the probe watches (the dashboard's list shows as many). */
const WATCHED_APPROVALS = 100;

export interface ConversationChangeProbeOptions {
  /** The handoffs to a person (`store.handoffs`): one opened or taken is a change too. */
  readonly handoffs?: Pick<HandoffRepository, 'listOpen'>;
  /** The tool calls waiting for a decision (`store.approvals`): one asked for or decided is a change too. */
  readonly approvals?: Pick<ApprovalRepository, 'list'>;
  /** How long one answer serves every open dashboard. Default 500 ms. */
  readonly ttlMs?: number;
}

/**
 * What the dashboard's live list watches: the 20 most recently active conversations (their last message, waiting
 * count, pause, end, status, who took it and its open handoff), the inbox and outbox depth, every open handoff (who
 * took it: the queue beyond those 20), and the pending approval requests. Four indexed queries with small limits;
 * read from the store, so a message another process accepted or answered, a handoff another process opened or took,
 * or a request asked or decided there, shows too.
 *
 * Every open dashboard shares one probe per `ttlMs`: ten tabs cost the store what one does.
 */
export function conversationChangeProbe(operators: OperatorQueries, options: ConversationChangeProbeOptions = {}): ChangeProbe {
  const { handoffs, approvals } = options;
  const probe = async () => {
    const [page, depth, open, pending] = await Promise.all([
      operators.conversations({ limit: 20 }),
      operators.depth(),
      handoffs?.listOpen(WATCHED_HANDOFFS) ?? [],
      approvals?.list({ status: 'pending', limit: WATCHED_APPROVALS }) ?? [],
    ]);
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
    return JSON.stringify([conversations, depth, open.map((handoff) => [handoff.id, handoff.takenBy]), pending.map((approval) => approval.id)]);
  };
  return sharedProbe(probe, options.ttlMs ?? 500);
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
