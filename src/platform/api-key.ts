import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler } from 'hono';
import { errorBody } from './error-body.js';

export interface ApiKeyAuthOptions {
  /** The key clients must send as `Authorization: Bearer <key>`. When absent, only loopback clients pass. */
  readonly apiKey?: string | undefined;
  /**
   * How to learn the client's address; defaults to @hono/node-server's `getConnInfo`. Returns `undefined` when
   * unknown (e.g. `app.request()` in tests), which counts as not loopback.
   */
  readonly remoteAddress?: (c: Context) => string | undefined;
}

/**
 * Guards a route: with a key configured, every client must send `Authorization: Bearer <key>` (401 otherwise);
 * without one, only loopback clients are served (403 otherwise), so a fresh install is never open to the network.
 *
 * Behind a reverse proxy on the same host every client looks local: configure a key there.
 * The key is compared in constant time and never logged or echoed.
 */
export function apiKeyAuth(options: ApiKeyAuthOptions): MiddlewareHandler {
  const expected = options.apiKey === undefined ? undefined : digest(options.apiKey);
  const remoteAddress = options.remoteAddress ?? connInfoAddress;

  return async (c, next) => {
    if (expected === undefined) {
      if (!isLoopbackAddress(remoteAddress(c))) {
        return c.json(
          errorBody(
            'forbidden',
            'Only local clients are served when no API key is configured. Set PALAVER_API_KEY (server.apiKey) and send it as "Authorization: Bearer <key>".',
          ),
          403,
        );
      }
      return next();
    }
    const presented = bearerToken(c.req.header('authorization'));
    // Hashing first gives equal lengths, which timingSafeEqual needs, without leaking the key's length.
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      c.header('WWW-Authenticate', 'Bearer');
      return c.json(errorBody('unauthorized', 'Send the API key as "Authorization: Bearer <key>".'), 401);
    }
    return next();
  };
}

/**
 * Guards the admin API with its own token, separate from the chat API key (a leaked chat key must not let anyone
 * relink accounts or read profiles). Without a token the admin API is off for every client, loopback included:
 * 403 naming the setting. The token is compared in constant time and never logged or echoed. It counts no failures:
 * `createHttpApp` guards `/admin` with `adminGuard`, which limits wrong tokens per address.
 */
export function adminTokenAuth(adminToken: string | undefined): MiddlewareHandler {
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  return async (c, next) => {
    if (expected === undefined) {
      return c.json(
        errorBody('admin_disabled', 'The admin API is off. Set PALAVER_ADMIN_TOKEN (server.adminToken) and send it as "Authorization: Bearer <token>".'),
        403,
      );
    }
    const presented = bearerToken(c.req.header('authorization'));
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      c.header('WWW-Authenticate', 'Bearer');
      return c.json(errorBody('unauthorized', 'Send the admin token as "Authorization: Bearer <token>".'), 401);
    }
    return next();
  };
}

/** True when `presented` is the admin token; compared in constant time (both hashed first, so lengths match). */
export function adminTokenMatches(presented: string, adminToken: string): boolean {
  return timingSafeEqual(digest(presented), digest(adminToken));
}

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (`::ffff:127.x.x.x`). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const lower = address.toLowerCase();
  if (lower === '::1' || lower === '0:0:0:0:0:0:0:1') return true;
  const v4 = lower.startsWith('::ffff:') ? lower.slice('::ffff:'.length) : lower;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/** The token of an `Authorization: Bearer <token>` header, or undefined for anything else. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function connInfoAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    // No Node socket behind this request (app.request(), another runtime): treat as remote.
    return undefined;
  }
}
