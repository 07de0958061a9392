import { Hono } from 'hono';
import type { z } from 'zod';
import { costsQuery, type costs } from '../../admin/api-contract.js';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import { parseQuery } from './request-query.js';

const BARE_DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/**
 * `GET /costs?by=day|user|conversation&from=&to=&userId=&sessionId=&limit=`: what replies cost, one row per key and
 * currency, with tokens by model; `from` is inclusive, `to` exclusive (a bare day `to=2026-11-27` includes that day).
 */
export function costsRoutes(queries: OperatorQueries): Hono {
  const app = new Hono();
  app.get('/costs', async (c) => {
    const query = parseQuery(c, costsQuery);
    if (!query.ok) return query.response;
    const { by, from, to, userId, sessionId, limit } = query.value;
    const report = await queries.costs({
      by,
      from: from === undefined ? undefined : new Date(from),
      // A bare day names the whole day: up to the next midnight (UTC).
      to: to === undefined ? undefined : new Date(Date.parse(to) + (BARE_DAY.test(to) ? DAY_MS : 0)),
      userId,
      sessionId,
      limit,
    });
    return c.json({ by, rows: report.rows.map((row) => ({ ...row, models: [...row.models] })), totals: [...report.totals] } satisfies z.input<typeof costs>);
  });
  return app;
}
