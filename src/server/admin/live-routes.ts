import { Hono } from 'hono';
import type { z } from 'zod';
import type { liveTurns, overview } from '../../admin/api-contract.js';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';

/** The backlog of the tool stream and its dead letters, where tools are dispatched over Redis Streams. */
export type ToolStreamBacklog = () => Promise<{ readonly backlog: number; readonly deadLetters: number }>;

/**
 * What is going on now:
 *
 * - `GET /turns/live`  conversations with accepted messages not answered yet: waiting, running or paused
 * - `GET /overview`    inbox depth, the outbox, and the tool stream's backlog (null without `toolStream`)
 */
export function liveRoutes(queries: OperatorQueries, toolStream?: ToolStreamBacklog): Hono {
  const app = new Hono();

  app.get('/turns/live', async (c) => {
    const turns = await queries.liveTurns();
    return c.json({ turns: turns.map((turn) => ({ ...turn, oldestAt: turn.oldestAt.toISOString() })) } satisfies z.input<typeof liveTurns>);
  });

  app.get('/overview', async (c) => {
    const [depth, stream] = await Promise.all([queries.depth(), toolStream?.() ?? null]);
    return c.json({ inbox: { ...depth.inbox }, outbox: { ...depth.outbox }, toolStream: stream === null ? null : { ...stream } } satisfies z.input<
      typeof overview
    >);
  });

  return app;
}
