import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { z } from 'zod';
import { PalaverError } from '../../domain/errors.js';
import { readBrowserAsset } from '../../platform/browser-assets.js';
import { PACKAGE_ROOT } from '../../platform/package-root.js';
import { sameOrigin, tooManyAttempts } from '../admin-guard.js';
import { adminTokenMatches } from '../../platform/api-key.js';
import type { ClientAddress } from '../../platform/client-address.js';
import { errorBody } from '../../platform/error-body.js';
import { adminEventsResponse, type ChangeProbe } from '../../admin/admin-events.js';
import { sessionPrincipal, type OperatorAuthenticator } from '../../admin/admin-principal.js';
import { SESSION_COOKIE, type DashboardSessions } from '../../admin/dashboard-session.js';
import { summarizeMetrics, type MetricsSource } from '../../admin/metrics-summary.js';
import type { SignInLimiter } from '../sign-in-limiter.js';

/** `web/admin/` of the package. */
export const DEFAULT_DASHBOARD_DIR = join(PACKAGE_ROOT, 'web', 'admin');

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The dashboard loads nothing from elsewhere and talks only to this server; a sign-in form may post here. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const signInBody = z.object({ token: z.string().min(1).max(4096) });

export interface DashboardRoutesOptions {
  readonly adminToken: string;
  readonly sessions: DashboardSessions;
  /** Operator accounts: their tokens sign in too, as themselves. Without them only the admin token does. */
  readonly operators?: OperatorAuthenticator;
  /** Counts failed sign-ins per address; the same one the admin guard counts wrong bearer tokens with. */
  readonly limiter: SignInLimiter;
  /** Who the client is (see `clientAddressResolver`); the same one the admin guard uses. */
  readonly clientAddress: ClientAddress;
  /** Where `index.html` and the page's modules are. Default {@link DEFAULT_DASHBOARD_DIR}. */
  readonly dir?: string;
  /** Backs `GET /admin/events`; without it that route is absent and the page polls instead. */
  readonly events?: ChangeProbe;
  /** How often `/admin/events` runs the probe. Default 1000 ms. */
  readonly eventsIntervalMs?: number;
  readonly onProbeError?: (error: unknown) => void;
  /** Backs `GET /admin/metrics/summary` (this process's latencies and failures); without it that route is absent. */
  readonly metrics?: MetricsSource;
}

/**
 * The dashboard, mounted under `/admin` behind `adminGuard`:
 *
 * - `GET    /admin`                 the page (public: no data in it)
 * - `GET    /admin/assets/<file>`   its modules, styles and the chart library (Chart.js, from `dist/browser/`)
 * - `POST   /admin/session`         sign in with `{ "token" }` (JSON) or `token=` (a form), the admin token or an
 *                                   operator's: sets the session cookie and answers `{ csrfToken, expiresAt }` (a form
 *                                   gets 303 to `/admin`)
 * - `GET    /admin/session`         `{ signedIn: true, csrfToken, expiresAt }` for a session cookie (a reloaded page),
 *                                   else `{ signedIn: false }` (also once its operator account is disabled)
 * - `DELETE /admin/session`         sign out, on every process (the session's row leaves the store)
 * - `GET    /admin/events`          server-sent `changed` events (see `adminEventsResponse`)
 * - `GET    /admin/metrics/summary` turn, model and tool latency and failure counts (see `summarizeMetrics`)
 *
 * Failed sign-ins are counted per client address (`SignInLimiter`), with wrong bearer tokens: 429
 * `too_many_attempts` with `Retry-After`.
 * @throws PalaverError `web_assets_missing` when the page's folder, or Chart.js in `dist/browser/` (not built), cannot be read.
 */
export function dashboardRoutes(options: DashboardRoutesOptions): Hono {
  const { sessions, limiter } = options;
  const assets = loadAssets(options.dir ?? DEFAULT_DASHBOARD_DIR);
  const page = assets.get('index.html');
  if (page === undefined) throw new PalaverError('web_assets_missing', `The dashboard has no index.html in ${options.dir ?? DEFAULT_DASHBOARD_DIR}.`);
  const app = new Hono();

  const serve = (c: Context, asset: Asset) =>
    c.body(asset.content, 200, {
      'content-type': asset.type,
      'content-security-policy': CSP,
      'cache-control': 'no-cache',
      'referrer-policy': 'same-origin',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    });
  app.get('/', (c) => serve(c, page));
  app.get('/assets/:file', (c) => {
    const asset = assets.get(c.req.param('file'));
    return asset === undefined || asset === page ? c.json(errorBody('not_found', 'No such dashboard file.'), 404) : serve(c, asset);
  });

  app.post('/session', bodyLimit({ maxSize: 8192, onError: (c) => c.json(errorBody('body_too_large', 'Send only the token.'), 413) }), async (c) => {
    // A page of another site must not sign this browser in (login CSRF); a script without Origin may.
    if (c.req.header('origin') !== undefined && !sameOrigin(c)) return c.json(errorBody('cross_origin', 'Sign in from the dashboard of this server.'), 403);
    const address = options.clientAddress(c) ?? 'unknown';
    const wait = limiter.retryAfterSeconds(address);
    if (wait > 0) return tooManyAttempts(c, wait);
    const isForm = (c.req.header('content-type') ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
    const body = signInBody.safeParse(isForm ? Object.fromEntries(new URLSearchParams(await c.req.text())) : await c.req.json().catch(() => undefined));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "token": "<your token>" } as JSON, or token=<your token> as a form.'), 400);
    const { token } = body.data;
    const isAdminToken = adminTokenMatches(token, options.adminToken);
    const account = isAdminToken ? undefined : await options.operators?.authenticate(token);
    if (!isAdminToken && account === undefined) {
      limiter.fail(address);
      return c.json(errorBody('unauthorized', 'That is neither the admin token nor an active operator token.'), 401);
    }
    const { cookie, session } = await sessions.create(account?.id ?? null);
    setCookie(c, SESSION_COOKIE, cookie, {
      path: '/admin',
      httpOnly: true,
      sameSite: 'Strict',
      secure: isHttps(c),
      maxAge: Math.floor(sessions.ttlMs / 1000),
    });
    c.header('cache-control', 'no-store');
    if (isForm) return c.redirect('/admin', 303);
    return c.json({ csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() });
  });

  // Public, so that a page opened without a session learns it without an error: only the CSRF token of a valid
  // session cookie is ever answered (a cross-site page cannot read the answer, nor send the SameSite=Strict cookie).
  app.get('/session', async (c) => {
    const session = await sessions.verify(getCookie(c, SESSION_COOKIE));
    c.header('cache-control', 'no-store');
    if (session === undefined || (await sessionPrincipal(session, options.operators)) === undefined) return c.json({ signedIn: false });
    return c.json({ signedIn: true, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() });
  });
  app.delete('/session', async (c) => {
    await sessions.revoke(getCookie(c, SESSION_COOKIE));
    deleteCookie(c, SESSION_COOKIE, { path: '/admin', httpOnly: true, sameSite: 'Strict', secure: isHttps(c) });
    return c.body(null, 204);
  });

  const { events } = options;
  if (events !== undefined) {
    app.get('/events', (c) =>
      adminEventsResponse(
        {
          probe: events,
          ...(options.eventsIntervalMs === undefined ? {} : { intervalMs: options.eventsIntervalMs }),
          ...(options.onProbeError ? { onError: options.onProbeError } : {}),
        },
        c.req.raw.signal,
      ),
    );
  }
  const { metrics } = options;
  if (metrics !== undefined) app.get('/metrics/summary', async (c) => c.json(await summarizeMetrics(metrics)));
  return app;
}

interface Asset {
  readonly content: string;
  readonly type: string;
}

/** The page's files, read once at start (a missing folder fails then, not on the first visit), and Chart.js. */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  try {
    for (const file of readdirSync(dir)) {
      const type = TYPES[extname(file)];
      if (type !== undefined) assets.set(file, { content: readFileSync(join(dir, file), 'utf8'), type });
    }
  } catch (error) {
    throw new PalaverError('web_assets_missing', `Cannot read the dashboard from ${dir}.`, { cause: error });
  }
  // Chart.js's own prebuilt bundle, as the build ships it: never a CDN (the CSP would refuse it anyway).
  assets.set('chart.umd.min.js', { content: readBrowserAsset('chart.umd.min.js'), type: TYPES['.js']! });
  return assets;
}

/** Secure cookies when the browser came over HTTPS, directly or through a proxy that says so. */
function isHttps(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
}
