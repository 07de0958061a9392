import { Hono } from 'hono';
import type { z } from 'zod';
import { conversationsQuery, transcriptQuery, type conversationsPage, type transcript } from '../../admin/api-contract.js';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import { errorBody } from '../../platform/error-body.js';
import { cursorRefusal, parseQuery } from './request-query.js';
import { conversationView, transcriptMessageView, transcriptSummaryView } from './views.js';

/**
 * Conversations as operators read them:
 *
 * - `GET /conversations?q=&channel=&userId=&status=&paused=&cursor=&limit=`  most recently active first
 * - `GET /conversations/:sessionId`                                         one, with its last message and cost
 * - `GET /conversations/:sessionId/transcript?audit=1&limit=`               its last messages, oldest first; with
 *   `audit` the audit records too, tool calls with arguments, result, latency and error; and the conversation's
 *   summaries (the newest {@link MAX_SUMMARIES} versions, newest first)
 */
export function conversationsRoutes(queries: OperatorQueries): Hono {
  const app = new Hono();

  app.get('/conversations', async (c) => {
    const query = parseQuery(c, conversationsQuery);
    if (!query.ok) return query.response;
    try {
      const page = await queries.conversations(query.value);
      return c.json({ conversations: page.items.map(conversationView), nextCursor: page.nextCursor } satisfies z.input<typeof conversationsPage>);
    } catch (error) {
      return cursorRefusal(c, error);
    }
  });

  app.get('/conversations/:sessionId', async (c) => {
    const conversation = await queries.conversation(c.req.param('sessionId'));
    if (!conversation) return c.json(errorBody('not_found', `There is no conversation ${c.req.param('sessionId')}.`), 404);
    return c.json(conversationView(conversation));
  });

  app.get('/conversations/:sessionId/transcript', async (c) => {
    const query = parseQuery(c, transcriptQuery);
    if (!query.ok) return query.response;
    const conversation = await queries.conversation(c.req.param('sessionId'));
    if (!conversation) return c.json(errorBody('not_found', `There is no conversation ${c.req.param('sessionId')}.`), 404);
    const [messages, summaries] = await Promise.all([
      queries.transcript(conversation.sessionId, { audit: query.value.audit ?? false, limit: query.value.limit }),
      queries.summaries(conversation.sessionId, MAX_SUMMARIES),
    ]);
    return c.json({
      conversation: conversationView(conversation),
      messages: messages.map(transcriptMessageView),
      summaries: summaries.map(transcriptSummaryView),
    } satisfies z.input<typeof transcript>);
  });

  return app;
}

/** Summary versions a transcript shows: each covers all the ones before it. */
const MAX_SUMMARIES = 20;
