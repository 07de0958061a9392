import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import type { adminMe, disabledOperator, issuedOperatorToken, operatorAccount, operatorAccounts } from '../../admin/api-contract.js';
import type { IssuedOperatorToken, OperatorAccounts } from '../../admin/operator-accounts.js';
import type { AdminResult } from '../../domain/admin-result.js';
import type { OperatorAccount } from '../../domain/ports/store.js';
import { errorBody } from '../../platform/error-body.js';
import { principalOf } from '../admin-guard.js';
import { operatorRequest } from './action-routes.js';

/**
 * `GET /admin/me`: who the server takes the caller for (the dashboard shows it): `{ actor, role, operatorId }`.
 * Mounted by `createHttpApp` beside the guard, so it answers wherever the admin API does.
 */
export function meRoute(): Hono {
  const app = new Hono();
  app.get('/me', (c) => {
    const { actor, role, operatorId } = principalOf(c);
    return c.json({ actor, role, operatorId } satisfies z.input<typeof adminMe>);
  });
  return app;
}

/**
 * Operator accounts, mounted under `/admin` (admins only: see `src/admin/admin-roles.ts`):
 *
 * - `GET  /admin/operators`                   every account, disabled ones too, oldest first
 * - `POST /admin/operators`                   `{ name, role? }` → 201 `{ operator, token }`: the token, shown this once
 * - `POST /admin/operators/:id/disable`       `{ operator }`: its token and dashboard sessions stop working at once
 * - `POST /admin/operators/:id/reset-token`   `{ operator, token }`: a new token; the old one and its sessions stop
 *
 * Each change is in the operators' audit under the caller (`principalOf`). Answers with a token are `no-store`.
 */
export function operatorAccountRoutes(accounts: OperatorAccounts): Hono {
  const app = new Hono();

  app.get('/operators', async (c) => {
    const operators = await accounts.list();
    return c.json({ operators: operators.map(operatorView) } satisfies z.input<typeof operatorAccounts>);
  });

  app.post('/operators', async (c) => {
    const by = changeBy(c);
    if (!by.ok) return c.json(errorBody('invalid_request', by.message), 400);
    const body: unknown = await c.req.json().catch(() => undefined);
    return issued(c, await accounts.add(body, by.value), 201);
  });

  app.post('/operators/:id/disable', async (c) => {
    const by = changeBy(c);
    if (!by.ok) return c.json(errorBody('invalid_request', by.message), 400);
    const result = await accounts.disable(c.req.param('id'), by.value);
    if (!result.ok) return refusal(c, result.error);
    return c.json({ operator: operatorView(result.value) } satisfies z.input<typeof disabledOperator>);
  });

  app.post('/operators/:id/reset-token', async (c) => {
    const by = changeBy(c);
    if (!by.ok) return c.json(errorBody('invalid_request', by.message), 400);
    return issued(c, await accounts.resetToken(c.req.param('id'), by.value), 200);
  });

  return app;
}

/** An account as the admin API shows it (`operatorAccount`): never its token or digest. */
export function operatorView(account: OperatorAccount): z.input<typeof operatorAccount> {
  return {
    id: account.id,
    name: account.name,
    role: account.role,
    createdAt: account.createdAt.toISOString(),
    disabledAt: account.disabledAt?.toISOString() ?? null,
  };
}

/** The caller as the guard established it, with the request id the audit keeps. */
function changeBy(c: Context) {
  const request = operatorRequest(c);
  if (!request.ok) return request;
  return { ok: true as const, value: { ...principalOf(c), requestId: request.value.requestId } };
}

function issued(c: Context, result: AdminResult<IssuedOperatorToken>, status: 200 | 201): Response {
  if (!result.ok) return refusal(c, result.error);
  // The token is in this answer only: no cache may keep it.
  c.header('cache-control', 'no-store');
  const { operator, token } = result.value;
  return c.json({ operator: operatorView(operator), token } satisfies z.input<typeof issuedOperatorToken>, status);
}

const STATUS = { invalid: 400, not_found: 404, conflict: 409 } as const;

function refusal(c: Context, error: Extract<AdminResult<unknown>, { ok: false }>['error']): Response {
  return c.json(errorBody(error.code === 'invalid' ? 'invalid_request' : error.code, error.message), STATUS[error.code]);
}
