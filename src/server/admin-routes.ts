import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { AdminActor, AdminRefusal, AdminResult, IdentityAdmin } from '../identity/identity-admin.js';
import { principalOf } from './admin-guard.js';
import { errorBody } from '../platform/error-body.js';
import { clientAddressResolver, type ClientAddress } from '../platform/client-address.js';

const phoneBody = z.strictObject({ phone: z.string().min(1).max(64).nullable() });
const roleBody = z.strictObject({ role: z.string().min(1).max(64).nullable() });
/** A flow namespace as tools name them (`documents`, `cargo_docs`); the state is any JSON value, bounded in size. */
const flowNamespace = z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/);
const flowStateBody = z.strictObject({ state: z.json().nullable() });
const MAX_FLOW_STATE_BYTES = 16_384;
const relinkBody = z.strictObject({ channel: z.string().min(1).max(64), accountId: z.string().min(1).max(256), toUserId: z.string().min(1).max(128) });
const limitQuery = z.coerce.number().int().min(1).max(1000).optional();

/**
 * The admin API, mounted under `/admin` behind the admin guard (`createHttpApp`): JSON in, JSON out. Operators may
 * read (the GETs); the changes are for admins (`src/admin/admin-roles.ts`), audited under the guard's principal.
 *
 * - `GET    /admin/users/:userId`            the user, their accounts, role and profile
 * - `GET    /admin/users/:userId/events`     their identity audit (`?limit=`)
 * - `PATCH  /admin/users/:userId/profile`    change profile settings (any subset; field-level errors on 400; 409 when
 *                                            the stored profile cannot be read)
 * - `PUT    /admin/users/:userId/profile`    replace the whole profile (fields left out take the defaults)
 * - `PUT    /admin/users/:userId/phone`      `{ "phone": "+380 67 123 45 67" | null }`
 * - `PUT    /admin/users/:userId/role`       `{ "role": "driver" | null }`
 * - `PUT    /admin/users/:userId/flows/:namespace`   `{ "state": <JSON> | null }`: set or clear one flow namespace
 * - `GET    /admin/accounts/:channel/:accountId`   the user behind an account
 * - `POST   /admin/relink`                   `{ channel, accountId, toUserId }`: move an account and its own conversations
 */
export function adminRoutes(admin: IdentityAdmin, clientAddress: ClientAddress = clientAddressResolver()): Hono {
  const app = new Hono();
  const actorOf = (c: Context) => actorFrom(c, clientAddress);

  app.get('/users/:userId', async (c) => {
    const view = await admin.user(c.req.param('userId'));
    if (!view) return c.json(errorBody('not_found', `There is no user ${c.req.param('userId')}.`), 404);
    return c.json(view);
  });

  app.get('/users/:userId/events', async (c) => {
    const limit = limitQuery.safeParse(c.req.query('limit'));
    if (!limit.success) return c.json(errorBody('invalid_request', 'limit must be a whole number from 1 to 1000.'), 400);
    return answer(c, await admin.events(c.req.param('userId'), limit.data), (events) => ({ events }));
  });

  app.patch('/users/:userId/profile', async (c) => {
    const body = await jsonBody(c);
    if (body === undefined) return c.json(errorBody('invalid_json', 'Send the profile changes as a JSON object.'), 400);
    return answer(c, await admin.updateProfile(c.req.param('userId'), body, actorOf(c)), (profile) => ({ profile }));
  });

  app.put('/users/:userId/profile', async (c) => {
    const body = await jsonBody(c);
    if (body === undefined) return c.json(errorBody('invalid_json', 'Send the whole profile as a JSON object.'), 400);
    return answer(c, await admin.replaceProfile(c.req.param('userId'), body, actorOf(c)), (profile) => ({ profile }));
  });

  app.put('/users/:userId/phone', async (c) => {
    const body = phoneBody.safeParse(await jsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "phone": "<number>" } or { "phone": null }.'), 400);
    return answer(c, await admin.setPhone(c.req.param('userId'), body.data.phone, actorOf(c)), (value) => value);
  });

  app.put('/users/:userId/role', async (c) => {
    const body = roleBody.safeParse(await jsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "role": "<role>" } or { "role": null }.'), 400);
    return answer(c, await admin.setRole(c.req.param('userId'), body.data.role, actorOf(c)), (value) => value);
  });

  app.put('/users/:userId/flows/:namespace', async (c) => {
    const namespace = flowNamespace.safeParse(c.req.param('namespace'));
    if (!namespace.success) return c.json(errorBody('invalid_request', 'A flow namespace is a letter, then up to 63 letters, digits, _ . or -.'), 400);
    const body = flowStateBody.safeParse(await jsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "state": <any JSON value> } or { "state": null } to clear it.'), 400);
    if (Buffer.byteLength(JSON.stringify(body.data.state)) > MAX_FLOW_STATE_BYTES) {
      return c.json(errorBody('invalid_request', `A flow state holds at most ${MAX_FLOW_STATE_BYTES} bytes of JSON.`), 400);
    }
    return answer(c, await admin.setFlowState(c.req.param('userId'), namespace.data, body.data.state, actorOf(c)), (value) => value);
  });

  app.get('/accounts/:channel/:accountId', async (c) => {
    const user = await admin.userOfAccount(c.req.param('channel'), c.req.param('accountId'));
    if (!user) return c.json(errorBody('not_found', 'No user has that account.'), 404);
    return c.json({ userId: user.id });
  });

  app.post('/relink', async (c) => {
    const body = relinkBody.safeParse(await jsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "channel", "accountId", "toUserId" } as strings.'), 400);
    return answer(c, await admin.relink(body.data, actorOf(c)), (value) => value);
  });

  return app;
}

const STATUS: Readonly<Record<AdminRefusal['code'], 400 | 404 | 409>> = { invalid: 400, not_found: 404, conflict: 409 };

function answer<T>(c: Context, result: AdminResult<T>, body: (value: T) => unknown): Response {
  if (result.ok) return c.json(body(result.value) as object);
  const { code, message, ...details } = result.error;
  return c.json({ error: { code, message, ...details } }, STATUS[code]);
}

/** The parsed JSON body, or undefined when it is not a JSON object. */
async function jsonBody(c: Context): Promise<Record<string, unknown> | undefined> {
  try {
    const body: unknown = await c.req.json();
    return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Who made an admin change, for the audit: the caller as the admin guard established it, and the client's address
 * (behind a trusted proxy, the one it forwarded).
 */
function actorFrom(c: Context, clientAddress: ClientAddress): AdminActor {
  const { actor, operatorId } = principalOf(c);
  return { remoteAddress: clientAddress(c), requestId: c.req.header('x-request-id'), name: actor, ...(operatorId === null ? {} : { operatorId }) };
}
