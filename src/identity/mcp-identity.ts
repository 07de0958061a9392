import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { ConfigError, IdentityError } from '../domain/errors.js';
import type { User } from '../domain/model.js';
import type { AccountClaim, IdentityResolver, ResolvedIdentity } from '../domain/ports/identity.js';
import type { Store } from '../domain/ports/store.js';
import { silentLogger, type Logger } from '../observability/logger.js';
import type { McpConnection } from '../platform/mcp-connection.js';
import { normalisePhone } from './phones.js';
import { isProvisionalUserId, provisionalUserId } from './provisional-user.js';

export interface McpIdentityResolverOptions {
  /** Streamable HTTP endpoint of the team's MCP server, e.g. `https://directory.example/mcp`. */
  readonly url: string;
  /** The tool that names the user of an account. Default `verify_user`. */
  readonly tool?: string;
  /** Sent as `Authorization: Bearer …`; never logged. */
  readonly bearerToken?: string;
  /** Further headers sent with every request (a tenant id, say). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Per request (initialize, call). Default 10 000 ms: a person waits for this before being answered at all. */
  readonly timeoutMs?: number;
  /** Accounts whose user is remembered in this process. Default 10 000. */
  readonly cacheSize?: number;
  /** How long a remembered answer is used before the directory is asked again. Default 300 s; 0 turns the cache off. */
  readonly cacheTtlSeconds?: number;
  /**
   * When the directory cannot be reached: `refuse` (default) rejects with `IdentityError('unreachable')`; `provisional`
   * answers a new account as a provisional user (`provisionalUserId`), joined to its real user on a later message once
   * the directory answers. An account the directory already bound to a user is refused either way.
   */
  readonly onUnreachable?: 'refuse' | 'provisional';
  /** Region for a verified phone written without its country code (`identity.phones.defaultRegion`). */
  readonly phoneRegion?: string;
  readonly logger?: Logger;
  /** The `fetch` calls go out with: Palaver passes its own (`src/platform/outgoing-http.ts`). Default: the global `fetch`. */
  readonly fetch?: FetchLike;
}

const DEFAULT_TOOL = 'verify_user';
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_CACHE_SIZE = 10_000;
const DEFAULT_CACHE_TTL_SECONDS = 300;
/** The first attempt on the current session, the second on a fresh client: a restarted server drops sessions. */
const ATTEMPTS = 2;
const MAX_USER_ID_CHARS = 200;
const CLIENT_INFO = { name: 'palaver-identity', version: '0.1.0' };

type Connection = McpConnection;

/** A user id as a directory may write it: a non-empty string, or an integer (turned into its decimal string). */
const userIdSchema = z.union([
  z
    .string()
    .trim()
    .min(1)
    .max(MAX_USER_ID_CHARS)
    .regex(/^[^\u0000]*$/, 'no NUL')
    // The provisional prefix is Palaver's: a directory naming such a user would hand out a stand-in's conversations.
    .refine((id) => !isProvisionalUserId(id), 'not a provisional id'),
  z
    .number()
    .int()
    .transform((id) => String(id)),
]);
/** What the tool's answer must hold: the user under `user_id` or `id` (the first that is a valid id). */
const answerSchema = z.looseObject({ user_id: z.unknown().optional(), id: z.unknown().optional() });

/**
 * Identity from the team's own directory: each (account namespace, account id) is looked up with an MCP tool (default
 * `verify_user`, arguments `{ channel, account_id, phone? }`, the phone only when the channel vouches for it) whose
 * answer names the user (`user_id` or `id`, in `structuredContent` or JSON text). The directory is the authority:
 * its user gets a row under its id in Palaver's store and the account is bound to it, moved from another user if
 * need be.
 *
 * Each lookup has two attempts, the second on a fresh client (a restarted server has forgotten the session).
 * Answers are remembered per account in a bounded cache; a claim carrying a verified phone always asks the
 * directory. When the directory names nobody, `resolve` rejects with an `IdentityError`; when it cannot be reached,
 * too, unless `onUnreachable` is `provisional` (then a new account is answered as a provisional user, never as a
 * user the directory would name). The MCP SDK loads on the first lookup.
 *
 * @example
 * const identity = new McpIdentityResolver(store, { url: 'https://directory.example/mcp', bearerToken });
 * const { user } = await identity.resolve({ channel: 'telegram', accountId: '42' });
 */
export class McpIdentityResolver implements IdentityResolver {
  readonly #store: Store;
  readonly #url: URL;
  readonly #tool: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #timeoutMs: number;
  readonly #phoneRegion: string | undefined;
  readonly #logger: Logger;
  readonly #fetch: FetchLike;
  /** Removes the token from text that came from elsewhere (a server may echo request headers in an error body). */
  readonly #redact: (text: string) => string;
  readonly #cache: LRUCache<string, string> | undefined;
  readonly #onUnreachable: 'refuse' | 'provisional';
  #connecting: Promise<Connection> | undefined;
  #closed = false;

  constructor(store: Store, options: McpIdentityResolverOptions) {
    this.#store = store;
    try {
      this.#url = new URL(options.url);
    } catch (error) {
      throw new ConfigError(
        'identity.resolver.url is not an absolute URL',
        [{ path: 'identity.resolver.url', message: 'expected e.g. https://directory.example/mcp' }],
        { cause: error },
      );
    }
    this.#tool = options.tool ?? DEFAULT_TOOL;
    this.#onUnreachable = options.onUnreachable ?? 'refuse';
    const token = options.bearerToken;
    this.#headers = { ...options.headers, ...(token ? { Authorization: `Bearer ${token}` } : {}) };
    this.#redact = token ? (text) => text.split(token).join('[redacted]') : (text) => text;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#phoneRegion = options.phoneRegion;
    this.#logger = (options.logger ?? silentLogger()).child({ identityResolver: `mcp:${this.#url.host}` });
    this.#fetch = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
    const ttlSeconds = options.cacheTtlSeconds ?? DEFAULT_CACHE_TTL_SECONDS;
    const size = options.cacheSize ?? DEFAULT_CACHE_SIZE;
    this.#cache = ttlSeconds > 0 && size > 0 ? new LRUCache({ max: size, ttl: ttlSeconds * 1000 }) : undefined;
  }

  /**
   * The directory's user for the account, bound to it in the store.
   * @throws IdentityError `identity_unreachable` when both attempts failed, `identity_unrecognised` when the
   *   directory named no user.
   */
  async resolve(claim: AccountClaim): Promise<ResolvedIdentity> {
    const key = cacheKey(claim);
    const phone = await this.#verifiedPhone(claim);
    // A phone may move the account to another user: the directory decides, not what this process remembers.
    const cached = phone ? undefined : this.#cache?.get(key);
    if (cached !== undefined) {
      const user = await this.#store.users.findByAccount(claim.channel, claim.accountId);
      if (user?.id === cached) return this.#withAccounts(user);
    }
    let userId: string;
    try {
      userId = await this.#lookUp(claim, phone);
    } catch (error) {
      if (this.#onUnreachable === 'provisional' && error instanceof IdentityError && error.failure === 'unreachable' && !this.#closed) {
        return this.#provisional(claim, error);
      }
      throw error;
    }
    const user = await this.#bind(claim, userId, phone !== undefined);
    this.#cache?.set(key, user.id);
    return this.#withAccounts(user);
  }

  /** The account as last bound in the store; the directory is not asked (nothing is created here). */
  async find(claim: AccountClaim): Promise<ResolvedIdentity | undefined> {
    const user = await this.#store.users.findByAccount(claim.channel, claim.accountId);
    return user ? this.#withAccounts(user) : undefined;
  }

  /** Ends the MCP session. Safe to call twice; a later `resolve` rejects as unreachable. */
  async close(): Promise<void> {
    this.#closed = true;
    const connecting = this.#connecting;
    this.#connecting = undefined;
    await this.#dispose(connecting);
  }

  /** Asks the directory, twice at most; the second attempt on a fresh client. */
  async #lookUp(claim: AccountClaim, phone: string | undefined): Promise<string> {
    const args = { channel: claim.channel, account_id: claim.accountId, ...(phone ? { phone } : {}) };
    let lastError: unknown;
    for (let attempt = 1; attempt <= ATTEMPTS && !this.#closed; attempt += 1) {
      const connecting = this.#connect();
      let result: Readonly<Record<string, unknown>>;
      try {
        const { client } = await connecting;
        result = await client.callTool({ name: this.#tool, arguments: args }, undefined, { timeout: this.#timeoutMs });
      } catch (error) {
        lastError = error;
        this.#logger.warn({ attempt, channel: claim.channel, reason: this.#redact(describe(error)) }, 'identity directory call failed');
        // The next attempt gets a new client and session, whatever went wrong with this one.
        if (this.#connecting === connecting) this.#connecting = undefined;
        await this.#dispose(connecting);
        continue;
      }
      const userId = userIdFrom(result);
      if (userId !== undefined) return userId;
      this.#logger.warn({ channel: claim.channel, isError: result['isError'] === true }, 'identity directory named no user for the account');
      throw new IdentityError('unrecognised', `The identity directory's ${this.#tool} named no user for this ${claim.channel} account.`);
    }
    throw new IdentityError(
      'unreachable',
      `The identity directory at ${this.#url.origin}${this.#url.pathname} could not be reached (${ATTEMPTS} attempts): ${this.#redact(describe(lastError ?? 'closed'))}`,
      { cause: lastError },
    );
  }

  /**
   * The account's provisional user while the directory is unreachable, bound to the account (not cached: the next
   * message asks the directory again). Nothing a verified identity owns goes with it: an account the directory already
   * bound to a real user is refused (`unreachable`), since its conversations, role and history are that user's; the
   * provisional user gets no phone and a role it is given stays its own. See docs/identity-and-profiles.md.
   */
  async #provisional(claim: AccountClaim, unreachable: IdentityError): Promise<ResolvedIdentity> {
    const bound = await this.#store.users.findByAccount(claim.channel, claim.accountId);
    if (bound !== undefined && !isProvisionalUserId(bound.id)) throw unreachable;
    const userId = provisionalUserId(claim.channel, claim.accountId);
    const user =
      bound ??
      (await this.#store.transaction(async (tx) => {
        const { user } = await tx.users.ensureUser({ id: userId, displayName: claim.displayName ?? null });
        await tx.users.relinkAccount({ channel: claim.channel, accountId: claim.accountId, userId, carrySessions: false });
        return user;
      }));
    this.#logger.warn({ channel: claim.channel, userId }, 'identity directory unreachable; answering under a provisional identity');
    return { ...(await this.#withAccounts(user)), provisional: true };
  }

  /**
   * Makes sure the directory's user exists here and owns the account; the directory wins over an older binding, and
   * a move is recorded in the identity audit (actor `resolver`).
   */
  async #bind(claim: AccountClaim, userId: string, withPhone: boolean): Promise<User> {
    const bound = await this.#store.users.findByAccount(claim.channel, claim.accountId);
    if (bound?.id === userId) return bound;
    return this.#store.transaction(async (tx) => {
      const { user } = await tx.users.ensureUser({ id: userId, displayName: claim.displayName ?? null });
      // The account's own conversations on this channel follow it, so the person keeps them.
      const previous = await tx.users.relinkAccount({ channel: claim.channel, accountId: claim.accountId, userId, carrySessions: true });
      if (previous !== undefined && previous !== userId) {
        await tx.identityEvents.add({
          userId,
          kind: 'relink',
          channel: claim.channel,
          accountId: claim.accountId,
          fromUserId: previous,
          toUserId: userId,
          actor: 'resolver',
          details: { tool: this.#tool, phone: withPhone, ...(isProvisionalUserId(previous) ? { fromProvisional: true } : {}) },
        });
        this.#logger.info({ channel: claim.channel, fromUserId: previous, toUserId: userId }, 'identity directory moved the account to another user');
      }
      return user;
    });
  }

  /**
   * The phone the directory is told, as E.164 digits without the plus: only one the channel vouches for. A number
   * merely typed in a message is not sent: a directory that matches on phones would otherwise hand anyone who types a
   * victim's number their account.
   */
  async #verifiedPhone(claim: AccountClaim): Promise<string | undefined> {
    if (!claim.phone || claim.phoneVerified !== true) return undefined;
    // Telegram writes international numbers without the plus.
    const normalised = await normalisePhone(claim.phone, this.#phoneRegion, { plusOptional: true });
    if (normalised.ok) return normalised.digits;
    this.#logger.info({ channel: claim.channel, reason: normalised.reason }, 'verified phone is not a valid number; asking the directory without it');
    return undefined;
  }

  async #withAccounts(user: User): Promise<ResolvedIdentity> {
    const accounts = await this.#store.users.listAccounts(user.id);
    return { user, accounts: accounts.map(({ channel, accountId }) => ({ channel, accountId })) };
  }

  /** The client, opened once and shared by concurrent lookups until an attempt fails on it. */
  #connect(): Promise<Connection> {
    this.#connecting ??= this.#open();
    return this.#connecting;
  }

  async #open(): Promise<Connection> {
    // The MCP SDK loads with the first lookup, not at start-up.
    const { openMcpConnection } = await import('../platform/mcp-connection.js');
    return openMcpConnection({
      url: this.#url,
      headers: this.#headers,
      fetch: this.#fetch,
      timeoutMs: this.#timeoutMs,
      clientInfo: CLIENT_INFO,
      configure: (client) => {
        client.onerror = (error) => this.#logger.debug({ reason: this.#redact(describe(error)) }, 'identity directory transport error');
      },
    });
  }

  async #dispose(connecting: Promise<Connection> | undefined): Promise<void> {
    const connection = await connecting?.catch(() => undefined);
    if (!connection) return;
    const { closeMcpConnection } = await import('../platform/mcp-connection.js');
    await closeMcpConnection(connection);
  }
}

/**
 * The user id in a tool answer: `structuredContent` first, then each text item that parses as a JSON object; under
 * `user_id`, else `id`. An error answer names nobody.
 */
export function userIdFrom(result: Readonly<Record<string, unknown>>): string | undefined {
  if (result['isError'] === true) return undefined;
  const candidates: unknown[] = [result['structuredContent']];
  const content = Array.isArray(result['content']) ? result['content'] : [];
  for (const item of content) {
    const text = (item as { type?: unknown; text?: unknown } | null)?.type === 'text' ? (item as { text?: unknown }).text : undefined;
    if (typeof text === 'string') candidates.push(parseJson(text));
  }
  for (const candidate of candidates) {
    const answer = answerSchema.safeParse(candidate);
    if (!answer.success) continue;
    for (const value of [answer.data.user_id, answer.data.id]) {
      const id = userIdSchema.safeParse(value);
      if (id.success) return id.data;
    }
  }
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function cacheKey(claim: AccountClaim): string {
  return `${claim.channel}\u0000${claim.accountId}`;
}

/** A short reason for logs: the message only, never request options (which hold the token). */
function describe(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 300) : String(error).slice(0, 300);
}
