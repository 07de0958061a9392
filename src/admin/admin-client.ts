import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { PalaverError } from '../domain/errors.js';
import { OPERATOR_TOKEN_PREFIX } from './admin-principal.js';
import {
  adminActions,
  adminMe,
  approvalDecided,
  approvals,
  conversationsPage,
  costs,
  disabledOperator,
  endedConversation,
  handoffs,
  issuedOperatorToken,
  operatorAccounts,
  pauseState,
  sentAsAgent,
  takenConversation,
  telegramSynced,
  transcript,
  usersPage,
} from './api-contract.js';

/**
 * A refusal or failure of the admin API, or no answer at all. `kind` is what a script acts on; `status` is the
 * HTTP status when the server answered.
 */
export class AdminApiError extends PalaverError {
  override readonly name = 'AdminApiError';
  readonly kind: AdminFailure;
  readonly status: number | undefined;

  constructor(kind: AdminFailure, code: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(code, message, options);
    this.kind = kind;
    this.status = options?.status;
  }
}

export type AdminFailure =
  /** 400: the request itself is wrong (a bad filter, an empty message). */
  | 'invalid'
  /** 404: no such conversation or user. */
  | 'not_found'
  /** 401, 403, 409 and other 4xx: the token is wrong or missing, the admin API is off, or the state forbids it. */
  | 'refused'
  /** No connection, a timeout, a 5xx, or an answer that is not the admin API's. */
  | 'unavailable';

export interface AdminClientOptions {
  /** The running Palaver's base URL, e.g. `http://127.0.0.1:3000`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>`: the admin token, or an operator's own (`pvo_…`). */
  readonly token: string | undefined;
  /**
   * Who acts, for the operators' audit (`X-Palaver-Actor`), sent only with the admin token: the server records
   * `admin` without one. An operator token names its operator itself.
   */
  readonly actor?: string;
  /** Default: the global `fetch`. */
  readonly fetch?: typeof fetch;
  /** Per request; default 15 s. */
  readonly timeoutMs?: number;
}

type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/**
 * The admin API over HTTP, for `palaver admin`: each method sends one request and parses the answer with the
 * contract's schema (`api-contract.ts`), so a console never shows what it did not understand.
 * @throws AdminApiError for every failure, by `kind`.
 * @example
 * const admin = new AdminClient({ url: 'http://127.0.0.1:3000', token: process.env.PALAVER_ADMIN_TOKEN });
 * const { conversations } = await admin.conversations({ paused: true });
 */
export class AdminClient {
  readonly #options: AdminClientOptions;

  constructor(options: AdminClientOptions) {
    this.#options = options;
  }

  users(query: { q?: string; cursor?: string; limit?: number } = {}): Promise<z.infer<typeof usersPage>> {
    return this.#request('GET', '/admin/users', usersPage, { query });
  }

  conversations(
    query: { q?: string; channel?: string; userId?: string; status?: string; paused?: boolean; cursor?: string; limit?: number } = {},
  ): Promise<z.infer<typeof conversationsPage>> {
    return this.#request('GET', '/admin/conversations', conversationsPage, { query });
  }

  transcript(sessionId: string, query: { audit?: boolean; limit?: number } = {}): Promise<z.infer<typeof transcript>> {
    return this.#request('GET', `/admin/conversations/${encodeURIComponent(sessionId)}/transcript`, transcript, {
      query: { ...(query.audit ? { audit: 1 } : {}), limit: query.limit },
    });
  }

  /** Sends `text` as the agent. A repeat with the same `idempotencyKey` answers the same and sends nothing again. */
  send(sessionId: string, text: string, idempotencyKey: string): Promise<z.infer<typeof sentAsAgent>> {
    return this.#request('POST', `/admin/conversations/${encodeURIComponent(sessionId)}/messages`, sentAsAgent, {
      body: { text },
      headers: { 'idempotency-key': idempotencyKey },
    });
  }

  /**
   * Takes a conversation: assigned to this client's actor, the agent paused. Another operator's is refused
   * (`refused`, the message names who has it) unless `force`.
   */
  take(sessionId: string, options: { readonly force?: boolean } = {}): Promise<z.infer<typeof takenConversation>> {
    return this.#request('POST', `/admin/conversations/${encodeURIComponent(sessionId)}/take`, takenConversation, {
      body: options.force === true ? { force: true } : {},
    });
  }

  /** Hands a conversation back to the agent; `note` is for the agent's next turn, never shown to the person. */
  resume(sessionId: string, options: { readonly note?: string } = {}): Promise<z.infer<typeof pauseState>> {
    return this.#request('POST', `/admin/conversations/${encodeURIComponent(sessionId)}/resume`, pauseState, {
      body: options.note === undefined ? {} : { note: options.note },
    });
  }

  /** `pause`, `resume` or `end` a conversation. */
  act(action: 'pause' | 'resume' | 'end', sessionId: string): Promise<z.infer<typeof pauseState> | z.infer<typeof endedConversation>> {
    const path = `/admin/conversations/${encodeURIComponent(sessionId)}/${action}`;
    return action === 'end' ? this.#request('POST', path, endedConversation, {}) : this.#request('POST', path, pauseState, {});
  }

  costs(
    query: { by?: 'day' | 'user' | 'conversation'; from?: string; to?: string; userId?: string; sessionId?: string; limit?: number } = {},
  ): Promise<z.infer<typeof costs>> {
    return this.#request('GET', '/admin/costs', costs, { query });
  }

  /** The operators' own audit, newest first. */
  actions(query: { limit?: number } = {}): Promise<z.infer<typeof adminActions>> {
    return this.#request('GET', '/admin/actions', adminActions, { query });
  }

  /** Conversations handed to a person and not closed yet, oldest first: those waiting, and those an operator took. */
  handoffs(query: { limit?: number } = {}): Promise<z.infer<typeof handoffs>> {
    return this.#request('GET', '/admin/handoffs', handoffs, { query });
  }

  /** Approval requests, newest first; with `status`, only those (`pending`: still waiting for a decision). */
  approvals(query: { status?: 'pending' | 'approved' | 'declined' | 'expired'; limit?: number } = {}): Promise<z.infer<typeof approvals>> {
    return this.#request('GET', '/admin/approvals', approvals, { query });
  }

  /**
   * Approves or declines a request an operator decides. Decided before, or expired: `refused` (409, the message says
   * which); a person's request: `refused` (403); an unknown id: `not_found`.
   */
  decideApproval(id: string, decision: 'approve' | 'decline', options: { readonly reason?: string } = {}): Promise<z.infer<typeof approvalDecided>> {
    return this.#request('POST', `/admin/approvals/${encodeURIComponent(id)}/${decision}`, approvalDecided, {
      body: options.reason === undefined ? {} : { reason: options.reason },
    });
  }

  /** Who the server takes this client for: the name the audit records, the role, the operator account. */
  me(): Promise<z.infer<typeof adminMe>> {
    return this.#request('GET', '/admin/me', adminMe, {});
  }

  /** Every operator account, disabled ones too, oldest first. */
  operators(): Promise<z.infer<typeof operatorAccounts>> {
    return this.#request('GET', '/admin/operators', operatorAccounts, {});
  }

  /** Adds an operator account; the answer holds its token, shown this once. */
  addOperator(name: string, role: 'operator' | 'admin'): Promise<z.infer<typeof issuedOperatorToken>> {
    return this.#request('POST', '/admin/operators', issuedOperatorToken, { body: { name, role } });
  }

  /** Disables an operator account: its token and dashboard sessions stop working at once. */
  disableOperator(id: string): Promise<z.infer<typeof disabledOperator>> {
    return this.#request('POST', `/admin/operators/${encodeURIComponent(id)}/disable`, disabledOperator, {});
  }

  /** Issues an operator a new token (shown this once); the old one and its dashboard sessions stop working. */
  resetOperatorToken(id: string): Promise<z.infer<typeof issuedOperatorToken>> {
    return this.#request('POST', `/admin/operators/${encodeURIComponent(id)}/reset-token`, issuedOperatorToken, {});
  }

  /**
   * Stores a private chat's history through the process that runs the Telegram user account (`palaver telegram
   * sync` while `palaver start` holds the session). Give it a longer `timeoutMs`: a long history takes a while.
   */
  telegramSync(request: { chat: string; after?: number | undefined; limit: number }): Promise<z.infer<typeof telegramSynced>> {
    return this.#request('POST', '/admin/telegram-user/sync', telegramSynced, { body: request });
  }

  async #request<Schema extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: Schema,
    options: { readonly query?: Query; readonly body?: unknown; readonly headers?: Record<string, string> },
  ): Promise<z.infer<Schema>> {
    // Relative to the base, so a Palaver behind a path prefix (https://ops.example/palaver) keeps it.
    const url = new URL(path.slice(1), `${this.#options.url}/`);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    // Every request gets its own id: the audit keeps it beside the action, and a log line can be found by it.
    const headers: Record<string, string> = { accept: 'application/json', 'x-request-id': randomUUID(), ...options.headers };
    if (this.#options.actor !== undefined && !isOperatorToken(this.#options.token)) headers['x-palaver-actor'] = this.#options.actor;
    if (this.#options.token !== undefined) headers.authorization = `Bearer ${this.#options.token}`;
    if (method === 'POST') headers['content-type'] = 'application/json';

    let response: Response;
    try {
      response = await (this.#options.fetch ?? fetch)(url, {
        method,
        headers,
        ...(method === 'POST' ? { body: JSON.stringify(options.body ?? {}) } : {}),
        signal: AbortSignal.timeout(this.#options.timeoutMs ?? 15_000),
      });
    } catch (error) {
      throw new AdminApiError(
        'unavailable',
        'unreachable',
        `Cannot reach Palaver at ${this.#options.url} (${describeCause(error)}). Is it running? Give its address with --url.`,
        { cause: error },
      );
    }
    const body = await readJson(response);
    if (!response.ok) throw refusal(response.status, body, `${method} ${url.pathname}`);
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new AdminApiError(
        'unavailable',
        'unexpected_answer',
        `${this.#options.url} answered ${method} ${url.pathname} with something that is not the admin API's answer; is it a Palaver of the same version?`,
        { status: response.status, cause: parsed.error },
      );
    }
    // The answer as sent, now known to match: a newer server's extra fields reach `--json` instead of being dropped.
    return body as z.infer<Schema>;
  }
}

/** True for an operator's own token: the server names its operator, so no name is passed on with it. */
export function isOperatorToken(token: string | undefined): boolean {
  return token?.startsWith(OPERATOR_TOKEN_PREFIX) === true;
}

const errorEnvelope = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

function refusal(status: number, body: unknown, request: string): AdminApiError {
  const envelope = errorEnvelope.safeParse(body);
  const code = envelope.success ? envelope.data.error.code : `http_${status}`;
  // The server's message is shown as it is: it says how to fix the request and never carries secrets.
  const message = envelope.success ? envelope.data.error.message : `${request} failed with HTTP ${status}.`;
  const kind: AdminFailure = status >= 500 ? 'unavailable' : status === 404 ? 'not_found' : status === 400 ? 'invalid' : 'refused';
  return new AdminApiError(kind, code, message, { status });
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describeCause(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return 'no answer in time';
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : cause instanceof Error ? cause.message : String(cause);
}
