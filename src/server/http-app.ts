import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { ConversationHandler } from '../domain/ports/channel.js';
import type { Logger } from '../observability/logger.js';
import { aguiRoute } from './agui-route.js';
import { apiKeyAuth } from './api-key.js';
import { mountChatPage } from './chat-page.js';
import { errorBody } from './error-body.js';
import { healthRoute, type HealthProbe } from './health-route.js';

export interface HttpAppOptions {
  /** The runtime, as channels see it. */
  readonly handler: ConversationHandler;
  /** Backs `GET /health`. */
  readonly health: HealthProbe;
  /** Required as `Authorization: Bearer` on `/agui` and `/admin/*`; without it only loopback clients are served. */
  readonly apiKey?: string | undefined;
  /** Longest accepted user text, in characters. */
  readonly maxInboundChars: number;
  readonly logger: Logger;
  /** Largest accepted request body on `/agui`, in bytes. Default 1 MiB (AG-UI clients resend the history). */
  readonly maxBodyBytes?: number;
  /** Where `chat.html`, `chat.js` and `chat.css` live; `false` serves no page. Default: the package's `web/`. */
  readonly webDir?: string | false;
  /**
   * Adds routes after the built-in ones, e.g. `(app) => app.route('/admin', adminApp)`. Everything under
   * `/admin` is already behind the API-key guard.
   */
  readonly extraRoutes?: (app: Hono) => void;
  /** Send tool arguments and results to web clients (default false); see `AguiRouteOptions.showToolDetails`. */
  readonly showToolDetails?: boolean;
  /** Passed to the AG-UI route; see `AguiRouteOptions.headerWaitMs`. */
  readonly headerWaitMs?: number;
}

/**
 * The HTTP face of Palaver: `POST /agui` (AG-UI over SSE), `GET /health`, the web chat page at `/`, and any
 * `extraRoutes`. Web-standard and transport-free; `startHttpServer` puts it on a port.
 *
 * @example
 * const app = createHttpApp({ handler: runtime, health: async () => ({}), maxInboundChars: 16_000, logger });
 * const server = await startHttpServer(app, { host: '127.0.0.1', port: 3000 });
 */
export function createHttpApp(options: HttpAppOptions): Hono {
  const { logger } = options;
  const app = new Hono();

  app.onError((error, c) => {
    logger.error({ err: error, method: c.req.method, path: c.req.path }, 'unhandled error in HTTP route');
    return c.json(errorBody('internal_error', 'The server failed to handle the request; see the server log.'), 500);
  });
  app.notFound((c) => c.json(errorBody('not_found', `No route for ${c.req.method} ${c.req.path}.`), 404));

  const auth = apiKeyAuth({ apiKey: options.apiKey });
  app.use('/agui', auth);
  // Hono's `/admin/*` also matches `/admin` itself.
  app.use('/admin/*', auth);

  app.post(
    '/agui',
    bodyLimit({
      maxSize: options.maxBodyBytes ?? 1024 * 1024,
      onError: (c) => c.json(errorBody('body_too_large', 'The request body is too large; send only the new user message.'), 413),
    }),
    aguiRoute({
      handler: options.handler,
      maxInboundChars: options.maxInboundChars,
      logger: logger.child({ route: 'agui' }),
      ...(options.headerWaitMs === undefined ? {} : { headerWaitMs: options.headerWaitMs }),
      ...(options.showToolDetails === undefined ? {} : { showToolDetails: options.showToolDetails }),
    }),
  );
  app.get('/health', healthRoute({ health: options.health, logger }));
  if (options.webDir !== false) mountChatPage(app, options.webDir);

  options.extraRoutes?.(app);
  return app;
}
