import { Hono } from 'hono';
import { usersQuery, type usersPage } from '../../admin/api-contract.js';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import type { z } from 'zod';
import { cursorRefusal, parseQuery } from './request-query.js';
import { userView } from './views.js';

/**
 * `GET /users?q=&cursor=&limit=`: users, newest first, found by a part of their name, their phone's digits or a
 * channel account id. (`GET /users/:userId` and its events are the identity routes'.)
 */
export function usersRoutes(queries: OperatorQueries): Hono {
  const app = new Hono();
  app.get('/users', async (c) => {
    const query = parseQuery(c, usersQuery);
    if (!query.ok) return query.response;
    try {
      const page = await queries.users(query.value);
      return c.json({ users: page.items.map(userView), nextCursor: page.nextCursor } satisfies z.input<typeof usersPage>);
    } catch (error) {
      return cursorRefusal(c, error);
    }
  });
  return app;
}
