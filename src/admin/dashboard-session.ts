import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DashboardSessionRepository } from '../domain/ports/store.js';

/** The dashboard's session cookie. Its `Path=/admin` keeps it off every other route (the chat page's included). */
export const SESSION_COOKIE = 'palaver_admin';

/** How long a dashboard sign-in lasts by default: 12 hours. */
export const DEFAULT_SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface DashboardSessionsOptions {
  /** The admin token: sessions are signed with a key derived from it, so a new token signs everyone out. */
  readonly adminToken: string;
  /** Where sign-ins are kept: the database's (`store.dashboardSessions`), so sign-out reaches every process. */
  readonly store: DashboardSessionRepository;
  /** Lifetime of a sign-in. Default {@link DEFAULT_SESSION_TTL_MS}. */
  readonly ttlMs?: number;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  readonly now?: () => number;
}

/** A session as the guard sees it: its CSRF token (bound to it), when it ends, and whose it is. */
export interface DashboardSession {
  readonly csrfToken: string;
  readonly expiresAt: number;
  /** The operator account signed in; null when signed in with the admin token. */
  readonly operatorId: string | null;
}

/**
 * Dashboard sign-ins: HMAC-signed cookie values `v1.<expires>.<nonce>.<mac>`, each also a row in the store. No token
 * and no secret is in the cookie; the row holds a digest of the nonce, not the cookie. A cookie is good while its MAC
 * checks (forgeries are turned away without a query), it has not expired, and its row is in the store: every check
 * asks the store (one primary-key read, no cache), so signing out, which deletes the row, holds at once after a
 * restart and on every process of the database. The CSRF token is an HMAC of the session's nonce: bound to that one
 * session, useless with another.
 */
export class DashboardSessions {
  readonly #key: Buffer;
  readonly #store: DashboardSessionRepository;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: DashboardSessionsOptions) {
    // A key of its own, so a cookie's MAC never doubles as anything the token itself signs.
    this.#key = createHmac('sha256', options.adminToken).update('palaver dashboard session v1').digest();
    this.#store = options.store;
    this.#ttlMs = options.ttlMs ?? DEFAULT_SESSION_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Lifetime of a new session, in milliseconds (the cookie's `Max-Age`). */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /**
   * A new session, recorded in the store: the cookie value to set and its CSRF token. `operatorId` names the operator
   * account that signed in; without it the session is the admin token's.
   */
  async create(operatorId: string | null = null): Promise<{ readonly cookie: string; readonly session: DashboardSession }> {
    const now = this.#now();
    // Whole seconds, as the cookie carries it, so the row ends when the cookie does.
    const expiresAt = Math.floor((now + this.#ttlMs) / 1000) * 1000;
    const nonce = randomBytes(18).toString('base64url');
    await this.#store.create({ id: sessionId(nonce), createdAt: now, expiresAt, operatorId });
    const body = `v1.${expiresAt / 1000}.${nonce}`;
    return { cookie: `${body}.${this.#mac(body)}`, session: { csrfToken: this.#mac(`csrf.${nonce}`), expiresAt, operatorId } };
  }

  /**
   * The session behind a cookie value, or undefined when it is forged, expired or signed out. Whether its operator
   * account still works is the caller's question (`sessionPrincipal`).
   */
  async verify(cookie: string | undefined): Promise<DashboardSession | undefined> {
    const parsed = this.#parse(cookie);
    const stored = parsed === undefined ? undefined : await this.#store.findActive(sessionId(parsed.nonce), this.#now());
    if (parsed === undefined || stored === undefined) return undefined;
    return { csrfToken: this.#mac(`csrf.${parsed.nonce}`), expiresAt: parsed.expiresAt, operatorId: stored.operatorId };
  }

  /** True when `presented` is the CSRF token of `session` (from {@link verify}). Compared in constant time. */
  checkCsrf(session: DashboardSession, presented: string | undefined): boolean {
    return presented !== undefined && sameText(session.csrfToken, presented);
  }

  /** Signs a session out, for every process (the response also clears the cookie). */
  async revoke(cookie: string | undefined): Promise<void> {
    const parsed = this.#parse(cookie);
    if (parsed !== undefined) await this.#store.revoke(sessionId(parsed.nonce));
  }

  #parse(cookie: string | undefined): { readonly nonce: string; readonly expiresAt: number } | undefined {
    const match = cookie === undefined ? null : /^(v1\.(\d{1,12})\.([\w-]{16,64}))\.([\w-]{43})$/.exec(cookie);
    if (match === null) return undefined;
    const [, body, expires, nonce, mac] = match as unknown as [string, string, string, string, string];
    if (!sameText(this.#mac(body), mac)) return undefined;
    const expiresAt = Number(expires) * 1000;
    if (expiresAt <= this.#now()) return undefined;
    return { nonce, expiresAt };
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#key).update(text).digest('base64url');
  }
}

/** The stored id of a session: a digest of its nonce, so a copy of the table holds no cookie. */
function sessionId(nonce: string): string {
  return createHash('sha256').update(nonce).digest('base64url');
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
