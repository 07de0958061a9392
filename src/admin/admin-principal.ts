import { z } from 'zod';
import type { OperatorAccount, OperatorRole } from '../domain/ports/store.js';

/**
 * Who calls the admin API, as the server established it from the credential (never from what the client says about
 * itself): the name the operators' audit records, the role that decides what the call may do, and the operator
 * account behind it.
 */
export interface AdminPrincipal {
  /** An operator account's name; for the admin token `admin`, or the name its client passed on (`X-Palaver-Actor`). */
  readonly actor: string;
  readonly role: OperatorRole;
  /** The operator account; null for the admin token. */
  readonly operatorId: string | null;
}

/** How every operator token starts: a secret scanner (and a person) can tell one from other text. */
export const OPERATOR_TOKEN_PREFIX = 'pvo_';

/** The actor of the admin token when its client names nobody. */
export const ADMIN_ACTOR = 'admin';

/**
 * A name for the audit: an operator account's, or one the admin token's client passes on in `X-Palaver-Actor`.
 * Letters, digits, spaces and `._@-`, 1 to 64 of them once trimmed.
 */
export const actorName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[\p{L}\p{N} ._@-]+$/u);

/** The admin token's principal: an admin, named as its client says (scripts name their operator), else `admin`. */
export function adminTokenPrincipal(claimedActor?: string): AdminPrincipal {
  return { actor: claimedActor ?? ADMIN_ACTOR, role: 'admin', operatorId: null };
}

/** An operator account's principal: its stored name and role, whatever the request claims. */
export function operatorPrincipal(account: OperatorAccount): AdminPrincipal {
  return { actor: account.name, role: account.role, operatorId: account.id };
}

/** What the admin guard asks about operator accounts, on every request (no cache: a disabled account stops at once). */
export interface OperatorAuthenticator {
  /** The active account whose token this is; undefined for any other text. */
  authenticate(token: string): Promise<OperatorAccount | undefined>;
  /** The account with this id while it is active; undefined once it is disabled. */
  active(id: string): Promise<OperatorAccount | undefined>;
}

/**
 * The principal of a dashboard session: the admin token's, or its operator's while that account is active. Undefined
 * for an operator's session once the account is disabled (or when there are no accounts to ask).
 */
export async function sessionPrincipal(
  session: { readonly operatorId: string | null },
  operators: OperatorAuthenticator | undefined,
): Promise<AdminPrincipal | undefined> {
  if (session.operatorId === null) return adminTokenPrincipal();
  const account = await operators?.active(session.operatorId);
  return account === undefined ? undefined : operatorPrincipal(account);
}
