import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { SESSION_COOKIE, type DashboardSessions } from '../admin/dashboard-session.js';
import { adminTokenAuth } from './api-key.js';
import { errorBody } from './error-body.js';

export interface AdminGuardOptions {
  /** The admin token; without it everything under `/admin` answers 403 `admin_disabled`. */
  readonly adminToken?: string | undefined;
  /** The dashboard's sign-ins; without them only the bearer token is accepted. */
  readonly sessions?: DashboardSessions | undefined;
}

/**
 * Guards everything under `/admin`. A request passes with either
 *
 * - `Authorization: Bearer <admin token>` (scripts, `palaver admin`): checked as before, in constant time; or
 * - the dashboard's session cookie, signed and unexpired. A write (any method but GET and HEAD) with the cookie must
 *   also carry the session's CSRF token as `X-CSRF-Token` and an `Origin` naming this very host: SameSite=Strict
 *   already keeps other sites' requests cookie-less, and these two hold even where a browser or a sibling subdomain
 *   gets around it.
 *
 * The dashboard's own public routes pass without either: the page and its assets (no data in them) and the sign-in.
 * No CORS header is ever sent from here: the chat channel's `allowedOrigins` do not reach the admin routes.
 */
export function adminGuard(options: AdminGuardOptions): MiddlewareHandler {
  const bearer = adminTokenAuth(options.adminToken);
  const { sessions } = options;
  return async (c, next) => {
    if (options.adminToken === undefined || sessions === undefined || c.req.header('authorization') !== undefined) return bearer(c, next);
    if (isPublic(c.req.method, c.req.path)) return next();

    const cookie = getCookie(c, SESSION_COOKIE);
    if (sessions.verify(cookie) === undefined) {
      c.header('WWW-Authenticate', 'Bearer');
      return c.json(errorBody('unauthorized', 'Sign in on /admin, or send the admin token as "Authorization: Bearer <token>".'), 401);
    }
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      if (!sameOrigin(c)) return c.json(errorBody('cross_origin', 'A dashboard write must come from a page of this server (its Origin must name this host).'), 403);
      if (!sessions.checkCsrf(cookie, c.req.header('x-csrf-token'))) {
        return c.json(errorBody('csrf_failed', 'Send the CSRF token the dashboard got at sign-in as "X-CSRF-Token"; reload the page to get it again.'), 403);
      }
    }
    return next();
  };
}

/** The page, its assets, the sign-in and "am I signed in?": nothing in them is data, and the sign-in checks the token. */
function isPublic(method: string, path: string): boolean {
  if (method === 'GET' || method === 'HEAD') return path === '/admin' || path === '/admin/' || path === '/admin/session' || path.startsWith('/admin/assets/');
  return method === 'POST' && path === '/admin/session';
}

/** True when the request's `Origin` is this server as the browser reached it (same host and port as `Host`). */
export function sameOrigin(c: Context): boolean {
  const origin = c.req.header('origin');
  const host = c.req.header('host');
  if (origin === undefined || host === undefined) return false;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host === new URL(`${url.protocol}//${host}`).host;
  } catch {
    return false;
  }
}
