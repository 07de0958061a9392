import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The dashboard's session cookie. Its `Path=/admin` keeps it off every other route (the chat page's included). */
export const SESSION_COOKIE = 'palaver_admin';

/** How long a dashboard sign-in lasts by default: 12 hours. */
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface DashboardSessionsOptions {
  /** The admin token: sessions are signed with a key derived from it, so a new token signs everyone out. */
  readonly adminToken: string;
  /** Lifetime of a sign-in. Default {@link DEFAULT_SESSION_TTL_MS}. */
  readonly ttlMs?: number;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  readonly now?: () => number;
}

/** A session as the guard sees it: its CSRF token (bound to it) and when it ends. */
export interface DashboardSession {
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/**
 * Dashboard sign-ins as HMAC-signed cookie values: `v1.<expires>.<nonce>.<mac>`. No token and no secret is in the
 * cookie, and any process that knows the admin token can check it, so several processes behind one name share
 * sign-ins without a session table. The CSRF token is an HMAC of the session's nonce: bound to that one session,
 * useless with another.
 *
 * Signing out forgets the nonce in this process until it would have expired anyway; the browser drops the cookie.
 */
export class DashboardSessions {
  readonly #key: Buffer;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Signed-out nonces and when their sessions would have expired. */
  readonly #revoked = new Map<string, number>();

  constructor(options: DashboardSessionsOptions) {
    // A key of its own, so a cookie's MAC never doubles as anything the token itself signs.
    this.#key = createHmac('sha256', options.adminToken).update('palaver dashboard session v1').digest();
    this.#ttlMs = options.ttlMs ?? DEFAULT_SESSION_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Lifetime of a new session, in milliseconds (the cookie's `Max-Age`). */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** A new session: the cookie value to set and its CSRF token. */
  create(): { readonly cookie: string; readonly session: DashboardSession } {
    const expiresAt = this.#now() + this.#ttlMs;
    const nonce = randomBytes(18).toString('base64url');
    const body = `v1.${Math.floor(expiresAt / 1000)}.${nonce}`;
    return { cookie: `${body}.${this.#mac(body)}`, session: { csrfToken: this.#mac(`csrf.${nonce}`), expiresAt: Math.floor(expiresAt / 1000) * 1000 } };
  }

  /** The session behind a cookie value, or undefined when it is forged, expired or signed out. */
  verify(cookie: string | undefined): DashboardSession | undefined {
    const parsed = this.#parse(cookie);
    if (parsed === undefined) return undefined;
    return { csrfToken: this.#mac(`csrf.${parsed.nonce}`), expiresAt: parsed.expiresAt };
  }

  /** True when `presented` is the CSRF token of the session behind `cookie`. Compared in constant time. */
  checkCsrf(cookie: string | undefined, presented: string | undefined): boolean {
    const session = this.verify(cookie);
    if (session === undefined || presented === undefined) return false;
    return sameText(session.csrfToken, presented);
  }

  /** Signs a session out in this process (the response also clears the cookie). */
  revoke(cookie: string | undefined): void {
    const parsed = this.#parse(cookie);
    if (parsed === undefined) return;
    const now = this.#now();
    for (const [nonce, expiresAt] of this.#revoked) if (expiresAt <= now) this.#revoked.delete(nonce);
    this.#revoked.set(parsed.nonce, parsed.expiresAt);
  }

  #parse(cookie: string | undefined): { readonly nonce: string; readonly expiresAt: number } | undefined {
    const match = cookie === undefined ? null : /^(v1\.(\d{1,12})\.([\w-]{16,64}))\.([\w-]{43})$/.exec(cookie);
    if (match === null) return undefined;
    const [, body, expires, nonce, mac] = match as unknown as [string, string, string, string, string];
    if (!sameText(this.#mac(body), mac)) return undefined;
    const expiresAt = Number(expires) * 1000;
    if (expiresAt <= this.#now() || this.#revoked.has(nonce)) return undefined;
    return { nonce, expiresAt };
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#key).update(text).digest('base64url');
  }
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
