import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JWTVerifyGetKey } from 'jose';
import { PalaverError } from '../../domain/errors.js';
import type { Logger } from '../../observability/logger.js';
import { isLoopbackAddress } from '../../platform/api-key.js';
import { isBrowserRequest } from './request-guard.js';
import { badTextReason } from './text-check.js';

/** Name of the visitor cookie over http (loopback, a LAN address). */
export const VISITOR_COOKIE = 'palaver_visitor';
/**
 * Name of the visitor cookie over https: the `__Host-` prefix makes the browser refuse it unless it is `Secure`,
 * has `Path=/` and no `Domain`, so a sibling subdomain cannot plant its own visitor cookie on this site.
 */
export const SECURE_VISITOR_COOKIE = `__Host-${VISITOR_COOKIE}`;
/** Header that carries an embedding site's user token. `Authorization` is the API key's. */
export const USER_TOKEN_HEADER = 'x-palaver-user-token';
/**
 * The visitor cookie's value as a header, from the widget's frame whose browser keeps no cookie in another site's
 * page (third-party cookies blocked). A browser never adds it by itself, so it is no more open to forged requests
 * than the cookie; the cookie wins when both come.
 */
export const VISITOR_HEADER = 'x-palaver-visitor';
/** How long a visitor cookie lives; renewed on every visit of the page. 400 days is the most browsers keep. */
const VISITOR_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60;
const COOKIE_VERSION = 'v1';
const MAX_USER_ID_CHARS = 256;

/** Verification of an embedding site's user tokens (`channels.web.userTokens`). */
export interface UserTokenOptions {
  /** HS256 shared secret. Exactly one of `secret` and `jwksUrl`. */
  readonly secret?: string | undefined;
  /** JWKS URL of the issuer (asymmetric algorithms). */
  readonly jwksUrl?: string | undefined;
  /** Required `iss`, when set. */
  readonly issuer?: string | undefined;
  /** Required `aud`, when set. */
  readonly audience?: string | undefined;
}

export interface WebIdentityOptions {
  /** Signs visitor cookies (HMAC-SHA256). When absent, read from or generated into `cookieSecretFile`. */
  readonly cookieSecret?: string | undefined;
  /** Keeps a generated secret across restarts; absent: the secret lives in memory (visitors lose it on restart). */
  readonly cookieSecretFile?: string | undefined;
  readonly userTokens?: UserTokenOptions | undefined;
  /** The server's API key (`server.apiKey`); a client presenting it may name users. */
  readonly apiKey?: string | undefined;
  readonly logger: Logger;
  /** Told the cookie secret once it is known (read from its file or generated), so the log scrubber censors it. */
  readonly onSecret?: ((secret: string) => void) | undefined;
  /** Clock for token expiry, in tests. */
  readonly now?: () => Date;
}

/** Who sent a request, as the server decided it. `accountId` is prefixed by source so sources never collide. */
export type WebCaller =
  | { readonly kind: 'server'; readonly accountId: string | undefined; readonly via: 'api_key' | 'loopback' }
  | { readonly kind: 'token'; readonly accountId: string }
  | { readonly kind: 'visitor'; readonly accountId: string };

export type IdentityResult =
  | { readonly ok: true; readonly caller: WebCaller }
  | { readonly ok: false; readonly status: 401 | 403; readonly code: string; readonly message: string };

/**
 * Decides who is talking to the web channel; a field of the message never does. In order:
 *
 * 1. `Authorization: Bearer <server.apiKey>`: a server-to-server client, which may name a user
 *    (`forwardedProps.userId` → account `api:<userId>`). A wrong key is refused (401).
 * 2. `x-palaver-user-token: <JWT>`: an embedding site's user, verified with jose (HS256 secret or JWKS; `exp` and
 *    `sub` required, `iss`/`aud` checked when configured) → account `token:<sub>`. Invalid or expired: 401.
 * 3. The signed visitor cookie (or, from the widget's frame where the browser keeps no cookie, the same value in
 *    `x-palaver-visitor`) → account `visitor:<random id>`. A bad signature: 401.
 * 4. Without an API key configured, a loopback client that is not a browser (no `Origin`, no `Sec-Fetch-Site`)
 *    is a server-to-server client, as above.
 * Otherwise 401 `no_identity`.
 */
export class WebIdentity {
  readonly #cookieKey: Buffer;
  readonly #apiKeyDigest: Buffer | undefined;
  readonly #tokens: { readonly key: Promise<Uint8Array | JWTVerifyGetKey>; readonly options: UserTokenOptions } | undefined;
  readonly #now: () => Date;

  /** @throws PalaverError `cookie_secret_unreadable` when the secret file exists but cannot be read or written. */
  constructor(options: WebIdentityOptions) {
    const secret = loadCookieSecret(options);
    options.onSecret?.(secret);
    this.#cookieKey = createHash('sha256').update(secret, 'utf8').digest();
    this.#apiKeyDigest = options.apiKey === undefined ? undefined : digest(options.apiKey);
    this.#now = options.now ?? (() => new Date());
    const tokens = options.userTokens;
    if (tokens && (tokens.secret !== undefined || tokens.jwksUrl !== undefined)) {
      // jose loads only where user tokens are configured, and the JWKS is fetched on the first token.
      const key: Promise<Uint8Array | JWTVerifyGetKey> =
        tokens.secret !== undefined
          ? Promise.resolve(new TextEncoder().encode(tokens.secret))
          : // Bounded: a JWKS that does not answer within 5 s fails the token, and is not fetched again for 30 s.
            loadJose().then((jose) => jose.createRemoteJWKSet(new URL(tokens.jwksUrl!), { timeoutDuration: 5_000, cooldownDuration: 30_000 }));
      key.catch(() => {});
      this.#tokens = { key, options: tokens };
    }
  }

  /** Who sent `request`; see the class comment for the order. */
  async identify(request: Request, remoteAddress: string | undefined): Promise<IdentityResult> {
    const authorization = request.headers.get('authorization');
    if (authorization !== null && this.#apiKeyDigest !== undefined) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
      if (presented === undefined || !timingSafeEqual(digest(presented), this.#apiKeyDigest)) {
        return refuse(401, 'unauthorized', 'The API key in "Authorization: Bearer <key>" is not the server\'s; browsers need no key.');
      }
      return { ok: true, caller: { kind: 'server', accountId: undefined, via: 'api_key' } };
    }

    const token = request.headers.get(USER_TOKEN_HEADER);
    if (token !== null) return this.#verifyToken(token);

    const cookie = readCookie(request.headers.get('cookie'), visitorCookieName(request)) ?? request.headers.get(VISITOR_HEADER) ?? undefined;
    if (cookie !== undefined) {
      const visitor = this.#verifyCookie(cookie);
      if (visitor === undefined) {
        return refuse(401, 'invalid_visitor_cookie', 'The visitor cookie is not valid (its signature does not match); reload the chat page to get a new one.');
      }
      return { ok: true, caller: { kind: 'visitor', accountId: `visitor:${visitor}` } };
    }

    if (this.#apiKeyDigest === undefined && isLoopbackAddress(remoteAddress) && !isBrowserRequest(request)) {
      return { ok: true, caller: { kind: 'server', accountId: undefined, via: 'loopback' } };
    }
    return refuse(
      401,
      'no_identity',
      `Who is sending is not known: open the chat page (it gives this browser a visitor cookie), send a signed user token in ${USER_TOKEN_HEADER}, or the API key as "Authorization: Bearer <key>" from a server.`,
    );
  }

  /** A fresh signed visitor cookie value: `v1.<random id>.<HMAC-SHA256>`. */
  newVisitorCookie(): string {
    const id = randomBytes(16).toString('base64url');
    return `${COOKIE_VERSION}.${id}.${this.#sign(id)}`;
  }

  /** True when `request` carries a visitor cookie this server signed. */
  hasValidVisitorCookie(request: Request): boolean {
    const cookie = readCookie(request.headers.get('cookie'), visitorCookieName(request));
    return cookie !== undefined && this.#verifyCookie(cookie) !== undefined;
  }

  /**
   * `Set-Cookie` for a visitor of `request`: HttpOnly (no script reads it), SameSite=Lax (not sent with another
   * site's requests), Path=/; over https also Secure, under the `__Host-` name.
   *
   * `embedded` (the widget's frame on another site's page) over https: SameSite=None with Partitioned instead, since
   * browsers send no Lax cookie inside another site's page. The browser keeps that cookie apart for each embedding
   * site, so it tells nothing across sites; requests carrying it still pass the `Origin` checks of `RequestGuard`.
   */
  visitorSetCookie(value: string, request: Request, embedded = false): string {
    const secure = isHttps(request);
    const sameSite = secure && embedded ? 'SameSite=None; Partitioned' : 'SameSite=Lax';
    return `${visitorCookieName(request)}=${value}; Path=/; Max-Age=${VISITOR_COOKIE_MAX_AGE_S}; HttpOnly; ${sameSite}${secure ? '; Secure' : ''}`;
  }

  /** The visitor id of a cookie value, or undefined when it is malformed or its signature is not ours. */
  #verifyCookie(value: string): string | undefined {
    const [version, id, signature, ...rest] = value.split('.');
    if (version !== COOKIE_VERSION || id === undefined || signature === undefined || rest.length > 0) return undefined;
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(id)) return undefined;
    const expected = Buffer.from(this.#sign(id), 'base64url');
    const presented = Buffer.from(signature, 'base64url');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined;
    return id;
  }

  #sign(id: string): string {
    return createHmac('sha256', this.#cookieKey).update(`palaver-visitor:${id}`).digest('base64url');
  }

  async #verifyToken(token: string): Promise<IdentityResult> {
    if (this.#tokens === undefined) {
      return refuse(401, 'user_tokens_off', `This server takes no user tokens; set channels.web.userTokens to accept ${USER_TOKEN_HEADER}.`);
    }
    const { key, options } = this.#tokens;
    try {
      const verifyOptions = {
        algorithms: options.secret !== undefined ? ['HS256'] : ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
        requiredClaims: ['exp', 'sub'],
        currentDate: this.#now(),
        clockTolerance: 5,
        ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
        ...(options.audience === undefined ? {} : { audience: options.audience }),
      };
      const jose = await loadJose();
      const resolved = await key;
      const { payload } =
        resolved instanceof Uint8Array ? await jose.jwtVerify(token, resolved, verifyOptions) : await jose.jwtVerify(token, resolved, verifyOptions);
      const sub = payload.sub;
      if (typeof sub !== 'string' || sub === '' || sub.length > MAX_USER_ID_CHARS || badTextReason(sub) !== undefined) {
        return refuse(
          401,
          'invalid_user_token',
          `The user token's sub must be a user id of 1 to ${MAX_USER_ID_CHARS} characters without NUL or lone surrogates.`,
        );
      }
      return { ok: true, caller: { kind: 'token', accountId: `token:${sub}` } };
    } catch (error) {
      const { errors } = await loadJose();
      if (error instanceof errors.JWTExpired)
        return refuse(401, 'user_token_expired', 'The user token has expired; get a fresh one from the site that embeds the chat.');
      // jose's message names the failed check (signature, claim, algorithm), never the token itself.
      const reason = error instanceof errors.JOSEError ? error.message : 'it could not be verified';
      return refuse(401, 'invalid_user_token', `The user token was refused: ${reason}.`);
    }
  }
}

/**
 * True when the browser reached this server over https: the request URL (TLS here), or a proxy's
 * `X-Forwarded-Proto: https`. (A client that fakes the header only changes which cookie name it is asked for.)
 */
export function isHttps(request: Request): boolean {
  return request.url.startsWith('https:') || request.headers.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
}

/** The visitor cookie's name for this request's scheme. */
export function visitorCookieName(request: Request): string {
  return isHttps(request) ? SECURE_VISITOR_COOKIE : VISITOR_COOKIE;
}

function refuse(status: 401 | 403, code: string, message: string): IdentityResult {
  return { ok: false, status, code, message };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The value of cookie `name` in a `Cookie` header (the first one, as browsers send the most specific first). */
export function readCookie(header: string | null, name: string): string | undefined {
  if (header === null) return undefined;
  for (const pair of header.split(';')) {
    const index = pair.indexOf('=');
    if (index === -1) continue;
    if (pair.slice(0, index).trim() === name) return pair.slice(index + 1).trim();
  }
  return undefined;
}

/**
 * The cookie secret: configured, or read from its file, or generated (and written to the file with mode 0600 when
 * there is one). Generating is logged as a warning: several processes on one database must share one secret.
 */
function loadCookieSecret(options: WebIdentityOptions): string {
  if (options.cookieSecret !== undefined) return options.cookieSecret;
  const file = options.cookieSecretFile;
  if (file !== undefined) {
    try {
      const saved = readFileSync(file, 'utf8').trim();
      if (saved.length >= 32) return saved;
      throw new PalaverError(
        'cookie_secret_invalid',
        `The web cookie secret in ${file} is shorter than 32 characters; delete the file to have one generated, or set PALAVER_COOKIE_SECRET.`,
      );
    } catch (error) {
      if (error instanceof PalaverError) throw error;
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new PalaverError(
          'cookie_secret_unreadable',
          `Cannot read the web cookie secret from ${file}; fix its permissions, or set PALAVER_COOKIE_SECRET.`,
          { cause: error },
        );
      }
    }
  }
  const secret = randomBytes(32).toString('base64url');
  if (file === undefined) {
    options.logger.warn(
      'generated a web cookie secret in memory: visitors get new identities after a restart; set channels.web.cookieSecret or PALAVER_COOKIE_SECRET',
    );
    return secret;
  }
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  } catch (error) {
    // Another process may have written it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadCookieSecret(options);
    throw new PalaverError(
      'cookie_secret_unreadable',
      `Cannot write a web cookie secret to ${file}; set PALAVER_COOKIE_SECRET or channels.web.cookieSecretFile.`,
      { cause: error },
    );
  }
  options.logger.warn(
    { file },
    'generated a web cookie secret and saved it; set channels.web.cookieSecret or PALAVER_COOKIE_SECRET to choose it (processes sharing a database need the same one)',
  );
  return secret;
}

let jose: Promise<typeof import('jose')> | undefined;

function loadJose(): Promise<typeof import('jose')> {
  return (jose ??= import('jose'));
}
