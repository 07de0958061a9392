import { Hono } from 'hono';
import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import type { HandoffRepository } from '../../domain/ports/store.js';
import { conversationsRoutes } from './conversations-routes.js';
import { costsRoutes } from './costs-routes.js';
import { handoffsRoutes } from './handoffs-routes.js';
import { liveRoutes, type ToolStreamBacklog } from './live-routes.js';
import { usersRoutes } from './users-routes.js';

/** Options of {@link operatorReadRoutes}. */
export interface OperatorReadRoutesOptions {
  /** The store's read model (`Store.operators`). */
  readonly queries: OperatorQueries;
  /** Reports the tool stream's backlog for `GET /overview`; without it `toolStream` is null. */
  readonly toolStream?: ToolStreamBacklog | undefined;
  /** Conversations handed to a person (`Store.handoffs`), for `GET /handoffs`; without it that route is absent. */
  readonly handoffs?: Pick<HandoffRepository, 'listOpen'> | undefined;
}

/**
 * What operators read through the admin API, mounted under `/admin` beside the identity routes (the admin-token guard
 * is already there): users, conversations and transcripts, costs, live turns and the overview, and the conversations
 * handed to a person. The answers are the shapes of `src/admin/api-contract.ts`; a query it refuses gets 400
 * `invalid_request` naming the parameter.
 *
 * @example
 * http.route('/admin', adminRoutes(admin));
 * http.route('/admin', operatorReadRoutes({ queries: store.operators }));
 */
export function operatorReadRoutes(options: OperatorReadRoutesOptions): Hono {
  const app = new Hono();
  app.route('/', usersRoutes(options.queries));
  app.route('/', conversationsRoutes(options.queries));
  app.route('/', costsRoutes(options.queries));
  app.route('/', liveRoutes(options.queries, options.toolStream));
  if (options.handoffs) app.route('/', handoffsRoutes(options.handoffs, options.queries));
  return app;
}
