import { createHash, randomBytes } from 'node:crypto';
import type { AdminResult } from '../domain/admin-result.js';
import type { AdminActionKind, OperatorAccount, Store } from '../domain/ports/store.js';
import { ADMIN_ACTOR, OPERATOR_TOKEN_PREFIX, type AdminPrincipal, type OperatorAuthenticator } from './admin-principal.js';
import { newOperatorBody } from './api-contract.js';

/** A new operator token: `pvo_` and 32 random bytes in base64url (256 bits: nothing to guess, no need to slow a check). */
export function newOperatorToken(): string {
  return `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What the store keeps of a token: its SHA-256, in hex. */
export function operatorTokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Who manages an account, for the operators' audit. */
export type AccountChangeBy = AdminPrincipal & { readonly requestId: string | null };

/** An account with its token, as it is shown once: when it is made and when its token is re-issued. */
export interface IssuedOperatorToken {
  readonly operator: OperatorAccount;
  readonly token: string;
}

export interface OperatorAccountsOptions {
  readonly store: Store;
  /** The clock for `disabledAt`. Default: the system's. */
  readonly now?: () => Date;
}

/**
 * The people who operate Palaver: add one (their token is answered once and only its digest kept), list them,
 * disable one, issue one a new token. Each change is written to the operators' audit in its own transaction. A
 * disabled account and a replaced token stop working at once on every process: every request looks the token up, and
 * the account's dashboard sessions are signed out with it.
 */
export class OperatorAccounts implements OperatorAuthenticator {
  readonly #store: Store;
  readonly #now: () => Date;

  constructor(options: OperatorAccountsOptions) {
    this.#store = options.store;
    this.#now = options.now ?? (() => new Date());
  }

  /** Every account, disabled ones too, oldest first. */
  list(): Promise<OperatorAccount[]> {
    return this.#store.operatorAccounts.list();
  }

  /** Adds an account from `{ name, role? }`; refuses a name taken in any case, and `admin` (the admin token's actor). */
  async add(input: unknown, by: AccountChangeBy): Promise<AdminResult<IssuedOperatorToken>> {
    const body = newOperatorBody.safeParse(input);
    if (!body.success) {
      return invalid('Send { "name": "<1 to 64 letters, digits, spaces or ._@->", "role": "operator" | "admin" } (role defaults to operator).');
    }
    const { name, role } = body.data;
    if (name.toLowerCase() === ADMIN_ACTOR) return invalid(`"${ADMIN_ACTOR}" names the admin token in the audit; give the operator their own name.`);
    const token = newOperatorToken();
    return this.#store.transaction(async (tx): Promise<AdminResult<IssuedOperatorToken>> => {
      const made = await tx.operatorAccounts.create({ name, role, tokenDigest: operatorTokenDigest(token) });
      if (!made.created) return conflict(`There already is an operator named ${name} (names are compared without case); choose another name.`);
      await tx.adminActions.record(audit('operator_add', made.account, by, { role }));
      return { ok: true, value: { operator: made.account, token } };
    });
  }

  /** Disables an account: its token and its dashboard sessions stop working at once. Disabling it again changes nothing. */
  async disable(id: string, by: AccountChangeBy): Promise<AdminResult<OperatorAccount>> {
    return this.#store.transaction(async (tx): Promise<AdminResult<OperatorAccount>> => {
      const account = await tx.operatorAccounts.findById(id);
      if (!account) return notFound(id);
      const changed = await tx.operatorAccounts.disable(id, this.#now());
      const signedOut = await tx.dashboardSessions.revokeOperator(id);
      await tx.adminActions.record(audit('operator_disable', account, by, { changed, signedOut }));
      return { ok: true, value: (await tx.operatorAccounts.findById(id)) ?? account };
    });
  }

  /** Issues an active account a new token: the old one stops working at once, and its dashboard sessions end. */
  async resetToken(id: string, by: AccountChangeBy): Promise<AdminResult<IssuedOperatorToken>> {
    const token = newOperatorToken();
    return this.#store.transaction(async (tx): Promise<AdminResult<IssuedOperatorToken>> => {
      const account = await tx.operatorAccounts.findById(id);
      if (!account) return notFound(id);
      if (!(await tx.operatorAccounts.replaceTokenDigest(id, operatorTokenDigest(token)))) {
        return conflict(`The operator ${account.name} is disabled; a disabled account gets no token. Add a new account instead.`);
      }
      const signedOut = await tx.dashboardSessions.revokeOperator(id);
      await tx.adminActions.record(audit('operator_reset_token', account, by, { signedOut }));
      return { ok: true, value: { operator: account, token } };
    });
  }

  async authenticate(token: string): Promise<OperatorAccount | undefined> {
    // Only what could be an operator token costs a query.
    if (!token.startsWith(OPERATOR_TOKEN_PREFIX)) return undefined;
    return this.#store.operatorAccounts.findActiveByTokenDigest(operatorTokenDigest(token));
  }

  async active(id: string): Promise<OperatorAccount | undefined> {
    const account = await this.#store.operatorAccounts.findById(id);
    return account?.disabledAt === null ? account : undefined;
  }
}

function audit(action: AdminActionKind, account: OperatorAccount, by: AccountChangeBy, details: Record<string, unknown>) {
  return {
    action,
    actor: by.actor,
    operatorId: by.operatorId,
    requestId: by.requestId,
    details: { operatorId: account.id, name: account.name, ...details },
  };
}

function invalid(message: string): { ok: false; error: { code: 'invalid'; message: string } } {
  return { ok: false, error: { code: 'invalid', message } };
}

function notFound(id: string): { ok: false; error: { code: 'not_found'; message: string } } {
  return { ok: false, error: { code: 'not_found', message: `There is no operator ${id}.` } };
}

function conflict(message: string): { ok: false; error: { code: 'conflict'; message: string } } {
  return { ok: false, error: { code: 'conflict', message } };
}
