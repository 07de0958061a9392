import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import {
  actorName,
  adminTokenPrincipal,
  operatorPrincipal,
  sessionPrincipal,
  type AdminPrincipal,
  type OperatorAuthenticator,
} from '../admin/admin-principal.js';
import { permits, requiredRole } from '../admin/admin-roles.js';
import { SESSION_COOKIE, type DashboardSessions } from '../admin/dashboard-session.js';
import { SignInLimiter } from './sign-in-limiter.js';
import { adminTokenMatches, bearerToken } from '../platform/api-key.js';
import { clientAddressResolver, type ClientAddress } from '../platform/client-address.js';
import { errorBody } from '../platform/error-body.js';

export interface AdminGuardOptions {
  /** The admin token; without it everything under `/admin` answers 403 `admin_disabled`. */
  readonly adminToken?: string | undefined;
  /** The dashboard's sign-ins; without them only bearer tokens are accepted. */
  readonly sessions?: DashboardSessions | undefined;
  /** Operator accounts, whose tokens and sessions pass as their own; without them only the admin token does. */
  readonly operators?: OperatorAuthenticator | undefined;
  /** Counts wrong tokens per client address; share it with the dashboard's sign-in. Default: a limiter of its own. */
  readonly limiter?: SignInLimiter;
  /** Who the client is (see `clientAddressResolver`). Default: the socket's peer. */
  readonly clientAddress?: ClientAddress;
}

/** The principal of each request the guard let through, by its Request: set once, read by the routes behind. */
const principals = new WeakMap<Request, AdminPrincipal>();

/**
 * Who calls: the principal the admin guard established for this request (see {@link adminGuard}).
 * @throws Error when the route is not behind the guard: a route under `/admin` always is (`createHttpApp`).
 */
export function principalOf(c: Context): AdminPrincipal {
  const principal = principals.get(c.req.raw);
  if (principal === undefined) throw new Error(`${c.req.method} ${c.req.path} ran without the admin guard; mount admin routes under /admin.`);
  return principal;
}

/**
 * Guards everything under `/admin`, and establishes who calls (`principalOf`). A request passes with
 *
 * - `Authorization: Bearer <admin token>` (scripts, `palaver admin`): compared in constant time; an admin, named
 *   `admin` or as the client says in `X-Palaver-Actor` (a script names its operator; it proves nothing);
 * - `Authorization: Bearer <operator token>` (`pvo_…`): the operator account whose token it is, while it is active,
 *   looked up on every request; named as the account is, whatever `X-Palaver-Actor` says, with its role.
 *
 *   A wrong token counts as a failed sign-in of the client's address (`SignInLimiter`, shared with the dashboard's
 *   sign-in form); an address with too many gets 429 `too_many_attempts` with `Retry-After`, the right token
 *   included; or
 * - the dashboard's session cookie, signed, unexpired, not signed out, and (an operator's) of an active account: its
 *   operator, or an admin named `admin` for a sign-in with the admin token. A write (any method but GET and HEAD)
 *   with the cookie must also carry the session's CSRF token as `X-CSRF-Token` and an `Origin` naming this very host:
 *   SameSite=Strict already keeps other sites' requests cookie-less, and these two hold even where a browser or a
 *   sibling subdomain gets around it. A cookie cannot be guessed (its MAC is 256 bits), so a stale one is not
 *   counted as a failure, and a valid one passes from a locked address: it proves a token was known.
 *
 * What the principal may do is its role's (`requiredRole`): an operator asking for an admin's route gets 403
 * `forbidden`. The dashboard's own public routes pass without credentials: the page and its assets (no data in them)
 * and the sign-in. No CORS header is ever sent from here: the chat channel's `allowedOrigins` do not reach the admin
 * routes.
 */
export function adminGuard(options: AdminGuardOptions): MiddlewareHandler {
  const { adminToken, sessions, operators } = options;
  const limiter = options.limiter ?? new SignInLimiter();
  const clientAddress = options.clientAddress ?? clientAddressResolver();
  return async (c, next) => {
    if (adminToken === undefined) {
      return c.json(
        errorBody('admin_disabled', 'The admin API is off. Set PALAVER_ADMIN_TOKEN (server.adminToken) and send it as "Authorization: Bearer <token>".'),
        403,
      );
    }
    const { method, path } = c.req;
    let principal: AdminPrincipal;
    const authorization = c.req.header('authorization');
    if (authorization !== undefined || sessions === undefined) {
      const address = clientAddress(c) ?? 'unknown';
      const wait = limiter.retryAfterSeconds(address);
      if (wait > 0) return tooManyAttempts(c, wait);
      const presented = bearerToken(authorization);
      const isAdminToken = presented !== undefined && adminTokenMatches(presented, adminToken);
      const account = presented === undefined || isAdminToken ? undefined : await operators?.authenticate(presented);
      if (!isAdminToken && account === undefined) {
        // A request with no credentials at all guesses nothing; anything else in the header is a try.
        if (authorization !== undefined) limiter.fail(address);
        c.header('WWW-Authenticate', 'Bearer');
        return c.json(errorBody('unauthorized', 'Send the admin token or your operator token as "Authorization: Bearer <token>".'), 401);
      }
      if (account !== undefined) principal = operatorPrincipal(account);
      else {
        const claimed = claimedActor(c);
        if (claimed === false) return c.json(errorBody('invalid_request', 'X-Palaver-Actor must be a name of 1 to 64 letters, digits, spaces or ._@-'), 400);
        principal = adminTokenPrincipal(claimed);
      }
    } else {
      if (isPublic(method, path)) return next();
      const session = await sessions.verify(getCookie(c, SESSION_COOKIE));
      const signedIn = session === undefined ? undefined : await sessionPrincipal(session, operators);
      if (session === undefined || signedIn === undefined) {
        c.header('WWW-Authenticate', 'Bearer');
        return c.json(errorBody('unauthorized', 'Sign in on /admin, or send the admin token or your operator token as "Authorization: Bearer <token>".'), 401);
      }
      if (method !== 'GET' && method !== 'HEAD') {
        if (!sameOrigin(c))
          return c.json(errorBody('cross_origin', 'A dashboard write must come from a page of this server (its Origin must name this host).'), 403);
        if (!sessions.checkCsrf(session, c.req.header('x-csrf-token'))) {
          return c.json(errorBody('csrf_failed', 'Send the CSRF token the dashboard got at sign-in as "X-CSRF-Token"; reload the page to get it again.'), 403);
        }
      }
      principal = signedIn;
    }
    if (!isPublic(method, path) && !permits(principal.role, requiredRole(method, path))) {
      return c.json(
        errorBody('forbidden', `${principal.actor} signs in as an operator, and ${method} ${path} is for admins: ask an admin to do it, or to make you one.`),
        403,
      );
    }
    principals.set(c.req.raw, principal);
    return next();
  };
}

/**
 * The name the admin token's client passes on in `X-Palaver-Actor`: undefined without one, false when it is not a
 * name (1 to 64 letters, digits, spaces or `._@-`). A read names nobody in the audit, so only a write is refused for it.
 */
function claimedActor(c: Context): string | undefined | false {
  const value = c.req.header('x-palaver-actor');
  if (value === undefined) return undefined;
  const parsed = actorName.safeParse(value);
  if (parsed.success) return parsed.data;
  return c.req.method === 'GET' || c.req.method === 'HEAD' ? undefined : false;
}

/** 429 `too_many_attempts` with `Retry-After`: the answer to a locked address, whatever it sent. */
export function tooManyAttempts(c: Context, waitSeconds: number): Response {
  c.header('Retry-After', String(waitSeconds));
  return c.json(errorBody('too_many_attempts', `Too many failed sign-ins from this address; try again in ${waitSeconds} s.`), 429);
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
