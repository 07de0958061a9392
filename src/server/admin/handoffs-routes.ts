import { Hono } from 'hono';
import type { z } from 'zod';
import { handoffsQuery, type handoffs, type handoffView } from '../../admin/api-contract.js';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import type { Handoff, HandoffRepository } from '../../domain/ports/store.js';
import { parseQuery } from './request-query.js';

/**
 * Conversations handed to a person:
 *
 * - `GET /handoffs?limit=`  the open ones, oldest first (those waiting and those an operator took), each with its
 *   conversation's channel, title and person; `waiting` counts the untaken ones among them
 */
export function handoffsRoutes(handoffRepository: Pick<HandoffRepository, 'listOpen'>, queries: Pick<OperatorQueries, 'conversation'>): Hono {
  const app = new Hono();

  app.get('/handoffs', async (c) => {
    const query = parseQuery(c, handoffsQuery);
    if (!query.ok) return query.response;
    const open = await handoffRepository.listOpen(query.value.limit);
    // One read per handoff, bounded by the limit: a queue of people waiting is short, or it is the problem.
    const views = await Promise.all(open.map(async (handoff) => handoffViewOf(handoff, await queries.conversation(handoff.sessionId))));
    return c.json({ handoffs: views, waiting: views.filter((view) => view.takenBy === null).length } satisfies z.input<typeof handoffs>);
  });

  return app;
}

function handoffViewOf(handoff: Handoff, conversation: Awaited<ReturnType<OperatorQueries['conversation']>>): z.input<typeof handoffView> {
  return {
    id: handoff.id,
    sessionId: handoff.sessionId,
    channel: conversation?.channel ?? null,
    conversationId: conversation?.conversationId ?? null,
    title: conversation?.title ?? null,
    person: { id: handoff.userId, name: conversation?.user.displayName ?? null },
    reason: handoff.reason,
    source: handoff.source,
    requestedAt: handoff.requestedAt.toISOString(),
    takenBy: handoff.takenBy,
    takenAt: handoff.takenAt?.toISOString() ?? null,
    notices: handoff.notices,
  };
}
