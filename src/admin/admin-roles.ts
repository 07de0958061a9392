import type { OperatorRole } from '../domain/ports/store.js';

// Who may do what under /admin. An `operator` works in conversations: reads them, the people in them and what goes on
// now, and acts in them; and decides the tool calls that wait for an operator (`/admin/approvals`). Everything else needs `admin`: changing who someone is (profile, phone, role, relink, flow
// state), managing operator accounts, costs, health and channel routes. A route nobody listed here is an admin's:
// a new route stays closed to operators until it is added on purpose.

/** Paths an operator may read (GET and HEAD). */
const OPERATOR_READS: readonly RegExp[] = [
  /^\/admin\/me$/,
  /^\/admin\/events$/,
  /^\/admin\/users$/,
  /^\/admin\/users\/[^/]+$/,
  /^\/admin\/users\/[^/]+\/events$/,
  /^\/admin\/accounts\/[^/]+\/[^/]+$/,
  /^\/admin\/conversations$/,
  /^\/admin\/conversations\/[^/]+$/,
  /^\/admin\/turns\/live$/,
  /^\/admin\/actions$/,
  /^\/admin\/handoffs$/,
  /^\/admin\/approvals$/,
];

/** Paths an operator may use with any method: everything about one conversation (transcript, send, pause, …). */
const OPERATOR_ANY: readonly RegExp[] = [/^\/admin\/conversations\/[^/]+\/.+$/, /^\/admin\/session$/];

/** Writes an operator may make beyond one conversation: deciding approval requests. */
const OPERATOR_WRITES: readonly RegExp[] = [/^\/admin\/approvals\/[^/]+\/(approve|decline)$/];

/** The least role a request to `path` (under `/admin`) with `method` needs. */
export function requiredRole(method: string, path: string): OperatorRole {
  const read = method === 'GET' || method === 'HEAD';
  if (OPERATOR_ANY.some((pattern) => pattern.test(path))) return 'operator';
  if (read && OPERATOR_READS.some((pattern) => pattern.test(path))) return 'operator';
  if (method === 'POST' && OPERATOR_WRITES.some((pattern) => pattern.test(path))) return 'operator';
  return 'admin';
}

/** True when `role` may do what needs `required`: an admin may do everything an operator may. */
export function permits(role: OperatorRole, required: OperatorRole): boolean {
  return role === 'admin' || required === 'operator';
}
