import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { PalaverError } from '../domain/errors.js';
import type { ChannelRoute } from '../domain/ports/channel.js';
import type { DashboardSessionRepository } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';
import type { ChangeProbe } from '../admin/admin-events.js';
import type { OperatorAuthenticator } from '../admin/admin-principal.js';
import type { MetricsSource } from '../admin/metrics-summary.js';
import { dashboardRoutes } from './admin/dashboard-routes.js';
import { meRoute } from './admin/operator-account-routes.js';
import { DashboardSessions } from '../admin/dashboard-session.js';
import { MemoryDashboardSessions } from '../admin/memory-dashboard-sessions.js';
import { SignInLimiter, type SignInLimiterOptions } from './sign-in-limiter.js';
import { adminGuard } from './admin-guard.js';
import { apiKeyAuth } from '../platform/api-key.js';
import { clientAddressResolver } from '../platform/client-address.js';
import { errorBody } from '../platform/error-body.js';
import { healthRoute, type HealthProbe } from './health-route.js';
import { hostGuard, type HostCheckOptions } from '../platform/host-check.js';

/** Body limit of a channel route that names none: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export interface HttpAppOptions {
  /** Backs `GET /health`. */
  readonly health: HealthProbe;
  /**
   * Required as `Authorization: Bearer` on channel routes of access `client`; without it only loopback clients are
   * served there.
   */
  readonly apiKey?: string | undefined;
  /** Required as `Authorization: Bearer` on `/admin/*`; without it the admin API is off (403). Never the API key. */
  readonly adminToken?: string | undefined;
  /**
   * Operator accounts (`OperatorAccounts`): their tokens, as bearer tokens and on the dashboard's sign-in, pass as
   * their own principals, with their roles. Without them only the admin token is accepted.
   */
  readonly operators?: OperatorAuthenticator | undefined;
  readonly logger: Logger;
  /** The channels' routes (`Channel.routes`), mounted as they are: web-standard Request → Response. */
  readonly routes: readonly ChannelRoute[];
  /**
   * Adds routes after the built-in ones, e.g. `/metrics` or `(app) => app.route('/admin', adminApp)`. Everything
   * under `/admin` is already behind the admin-token guard.
   */
  readonly extraRoutes?: (app: Hono) => void;
  /**
   * Which `Host` names `/health` and `/metrics` answer to besides loopback names, IP addresses and `serverHost`
   * (`server.allowedHosts`, `server.host`); any other name gets 421 `misdirected_host` (DNS rebinding).
   */
  readonly hosts?: HostCheckOptions;
  /**
   * The operators' dashboard at `/admin` (on whenever there is an admin token, unless `false`): its page, sign-in
   * with the admin token into a session cookie, and `/admin/events` when `events` is given.
   */
  readonly dashboard?: DashboardOptions | false;
  /**
   * Reverse proxies (addresses or CIDR ranges, `server.trustedProxies`) whose `X-Forwarded-For` names the client for
   * the admin sign-in limit; from any other peer the header is ignored. See `clientAddressResolver`.
   */
  readonly trustedProxies?: readonly string[];
}

/** How the dashboard is served; every field has a default. */
export interface DashboardOptions {
  /** The folder with the page (`index.html` and its modules). Default: the package's `web/admin/`. */
  readonly dir?: string;
  /** Backs the page's live updates (`GET /admin/events`); without it the page polls. */
  readonly events?: ChangeProbe;
  /** How often `/admin/events` asks `events`. Default 1000 ms. */
  readonly eventsIntervalMs?: number;
  /** Backs the page's latency and error figures (`GET /admin/metrics/summary`): the Prometheus registry. */
  readonly metrics?: MetricsSource;
  /** How long a sign-in lasts. Default 12 hours. */
  readonly sessionTtlMs?: number;
  /**
   * Where sign-ins are kept (`store.dashboardSessions`): then signing out holds after a restart and on every process
   * of the database. Default: in this process only.
   */
  readonly sessionStore?: DashboardSessionRepository;
  /** Failed sign-ins (and wrong bearer tokens on `/admin`) allowed per address: default 5 per 15 minutes. */
  readonly signInLimit?: SignInLimiterOptions;
}

/**
 * The HTTP face of Palaver: `GET /health`, every channel route (the web channel's `/agui` and chat page, a
 * webhook, …) and any `extraRoutes`. A route of access `client` is behind the client guard (`apiKeyAuth`); a
 * `public` route (the web channel's, which decide who is calling themselves) is not; every route gets its body
 * limit (413 `body_too_large`). Unknown routes get 404 `not_found`, failures 500
 * `internal_error`, all as `{ error: { code, message } }`. Transport-free; `startHttpServer` puts it on a port.
 *
 * @throws PalaverError `route_conflict` when two routes claim the same method and path.
 * @example
 * const web = new WebChannel({ maxInboundChars: 16_000, logger });
 * const app = createHttpApp({ health: async () => ({}), logger, routes: web.routes });
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
  const dashboard = options.adminToken === undefined || options.dashboard === false ? undefined : (options.dashboard ?? {});
  const sessions =
    dashboard && options.adminToken !== undefined
      ? new DashboardSessions({
          adminToken: options.adminToken,
          store: dashboard.sessionStore ?? new MemoryDashboardSessions(),
          ...(dashboard.sessionTtlMs === undefined ? {} : { ttlMs: dashboard.sessionTtlMs }),
        })
      : undefined;
  // One count of failures per address for every way in: the bearer token and the sign-in form.
  const limiter = new SignInLimiter(dashboard ? dashboard.signInLimit : undefined);
  const clientAddress = clientAddressResolver(options.trustedProxies);
  // Hono's `/admin/*` also matches `/admin` itself.
  const { operators } = options;
  app.use('/admin/*', adminGuard({ adminToken: options.adminToken, sessions, operators, limiter, clientAddress }));
  if (options.adminToken !== undefined) app.route('/admin', meRoute());
  if (dashboard && sessions && options.adminToken !== undefined) {
    app.route(
      '/admin',
      dashboardRoutes({
        adminToken: options.adminToken,
        sessions,
        ...(operators === undefined ? {} : { operators }),
        limiter,
        clientAddress,
        ...(dashboard.dir === undefined ? {} : { dir: dashboard.dir }),
        ...(dashboard.events === undefined ? {} : { events: dashboard.events }),
        ...(dashboard.eventsIntervalMs === undefined ? {} : { eventsIntervalMs: dashboard.eventsIntervalMs }),
        ...(dashboard.metrics === undefined ? {} : { metrics: dashboard.metrics }),
        onProbeError: (error) => logger.warn({ err: error }, 'dashboard change probe failed'),
      }),
    );
  }
  // The server's own read-only routes need no credentials from loopback, so a browser on a rebound name must not
  // reach them (channel routes check `Host` themselves; the admin API needs its token).
  const ownHosts = hostGuard(options.hosts ?? {});
  app.use('/health', ownHosts);
  app.use('/metrics', ownHosts);
  app.get('/health', healthRoute({ health: options.health, logger }));

  const taken = new Set(['GET /health']);
  for (const route of options.routes) {
    const key = `${route.method} ${route.path}`;
    if (taken.has(key)) throw new PalaverError('route_conflict', `Two routes claim ${key}; give each channel its own paths.`);
    // The admin guard is mounted on `/admin/*`: an admin route anywhere else would be open to anyone.
    if (route.access === 'admin' && !route.path.startsWith('/admin/'))
      throw new PalaverError('route_unguarded', `The admin route ${key} must live under /admin/, where the admin token guards it.`);
    taken.add(key);
    const handlers: MiddlewareHandler[] = [
      ...(route.access === 'client' ? [auth] : []),
      limitBody(route.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES),
      // The client's address as the admin limiter sees it: behind a trusted proxy, the one it forwarded.
      async (c) => route.handle(c.req.raw, { remoteAddress: clientAddress(c) }),
    ];
    app.on(route.method, route.path, ...(handlers as [MiddlewareHandler]));
  }

  options.extraRoutes?.(app);
  return app;
}

function limitBody(maxSize: number): MiddlewareHandler {
  return bodyLimit({
    maxSize,
    onError: (c) => c.json(errorBody('body_too_large', `The request body is larger than ${maxSize} bytes; send only the new message.`), 413),
  });
}
