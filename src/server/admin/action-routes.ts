import { Hono, type Context } from 'hono';
import { z } from 'zod';
import {
  type adminAction,
  resumeBody,
  sendAsAgentBody,
  takeBody,
  type endedConversation,
  type pauseState,
  type sentAsAgent,
  type takenConversation,
} from '../../admin/api-contract.js';
import type { OperatorActions, OperatorRequest } from '../../admin/operator-actions.js';
import { newId } from '../../domain/ids.js';
import type { AdminAction } from '../../domain/ports/store.js';
import type { AdminRefusal, AdminResult } from '../../identity/identity-admin.js';
import { errorBody } from '../../platform/error-body.js';
import { principalOf } from '../admin-guard.js';

/** Request ids and idempotency keys: visible ASCII, as HTTP headers carry them. */
const tokenHeader = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21-\x7e]+$/);
const actionsQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) });

/**
 * The operators' actions in conversations, mounted under `/admin` (behind the admin token):
 *
 * - `POST /admin/conversations/:sessionId/messages`  send `{ text }` as the agent (202); `Idempotency-Key` header
 * - `POST /admin/conversations/:sessionId/take`      `{ force? }`: assigned to the acting operator, the agent paused;
 *                                                    409 naming who has it unless `force`
 * - `POST /admin/conversations/:sessionId/pause`     the agent stops answering (messages are still stored)
 * - `POST /admin/conversations/:sessionId/resume`    `{ note? }`: handed back to the agent, the held messages answered
 *                                                    once; the note is hidden context for its next turn
 * - `POST /admin/conversations/:sessionId/end`       the next message starts a fresh context
 * - `GET  /admin/actions?limit=`                     the operators' audit, newest first
 *
 * Who acted is the caller as the admin guard established it (`principalOf`): an operator account, or the admin token
 * (`admin`, or the name its client sends in `X-Palaver-Actor`); `X-Request-Id` is kept with the action. A send's
 * key is `Idempotency-Key`, else the request id, else a new one.
 */
export function actionRoutes(operators: OperatorActions): Hono {
  const app = new Hono();

  app.post('/conversations/:sessionId/messages', async (c) => {
    const request = operatorRequest(c);
    if (!request.ok) return c.json(errorBody('invalid_request', request.message), 400);
    const key = c.req.header('idempotency-key');
    const checkedKey = key === undefined ? undefined : tokenHeader.safeParse(key);
    if (checkedKey !== undefined && !checkedKey.success)
      return c.json(errorBody('invalid_request', 'Idempotency-Key must be 1 to 200 visible ASCII characters.'), 400);
    const body = sendAsAgentBody.safeParse(await jsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send { "text": "<message>" } with 1 to 16 000 characters of text.'), 400);
    const idempotencyKey = checkedKey?.data ?? request.value.requestId ?? newId();
    const result = await operators.send(c.req.param('sessionId'), body.data.text, { ...request.value, idempotencyKey });
    return answer(c, result, (sent): z.infer<typeof sentAsAgent> => sent, 202);
  });

  app.post('/conversations/:sessionId/pause', async (c) => {
    const request = operatorRequest(c);
    if (!request.ok) return c.json(errorBody('invalid_request', request.message), 400);
    return answer(c, await operators.pause(c.req.param('sessionId'), request.value), (state): z.infer<typeof pauseState> => state);
  });

  app.post('/conversations/:sessionId/take', async (c) => {
    const request = operatorRequest(c);
    if (!request.ok) return c.json(errorBody('invalid_request', request.message), 400);
    const body = takeBody.safeParse(orEmpty(await optionalJsonBody(c)));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send no body, or { "force": true } to take it over from another operator.'), 400);
    const force = body.data.force === true ? { force: true } : {};
    return answer(c, await operators.take(c.req.param('sessionId'), request.value, force), (taken): z.infer<typeof takenConversation> => taken);
  });

  app.post('/conversations/:sessionId/resume', async (c) => {
    const request = operatorRequest(c);
    if (!request.ok) return c.json(errorBody('invalid_request', request.message), 400);
    const body = resumeBody.safeParse(orEmpty(await optionalJsonBody(c)));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send no body, or { "note": "<for the agent>" } with 1 to 4 000 characters.'), 400);
    const note = body.data.note === undefined ? {} : { note: body.data.note };
    return answer(c, await operators.resume(c.req.param('sessionId'), request.value, note), (state): z.infer<typeof pauseState> => state);
  });

  app.post('/conversations/:sessionId/end', async (c) => {
    const request = operatorRequest(c);
    if (!request.ok) return c.json(errorBody('invalid_request', request.message), 400);
    return answer(
      c,
      await operators.end(c.req.param('sessionId'), request.value),
      (session): z.infer<typeof endedConversation> => ({
        sessionId: session.id,
        status: session.status,
        endedAt: session.endedAt?.toISOString() ?? null,
      }),
    );
  });

  app.get('/actions', async (c) => {
    const query = actionsQuery.safeParse({ limit: c.req.query('limit') });
    if (!query.success) return c.json(errorBody('invalid_request', 'limit must be a whole number from 1 to 500.'), 400);
    const actions = await operators.actions(query.data.limit);
    return c.json({ actions: actions.map(toActionView) });
  });

  return app;
}

/** An audit row as the admin API shows it (`adminAction`); the idempotency key stays inside. */
export function toActionView(action: AdminAction): z.infer<typeof adminAction> {
  return {
    id: action.id,
    action: action.action,
    actor: action.actor,
    operatorId: action.operatorId,
    requestId: action.requestId,
    sessionId: action.sessionId,
    userId: action.userId,
    details: { ...action.details },
    at: action.createdAt.toISOString(),
  };
}

/** Who asks (the guard's principal: its name and operator account) and the request id. */
export function operatorRequest(c: Context): { readonly ok: true; readonly value: OperatorRequest } | { readonly ok: false; readonly message: string } {
  const { actor, operatorId } = principalOf(c);
  const requestIdValue = c.req.header('x-request-id');
  const requestId = requestIdValue === undefined ? undefined : tokenHeader.safeParse(requestIdValue);
  if (requestId !== undefined && !requestId.success) return { ok: false, message: 'X-Request-Id must be 1 to 200 visible ASCII characters.' };
  return { ok: true, value: { actor, operatorId, requestId: requestId?.data ?? null } };
}

const STATUS: Readonly<Record<AdminRefusal['code'], 400 | 404 | 409>> = { invalid: 400, not_found: 404, conflict: 409 };

function answer<T>(c: Context, result: AdminResult<T>, body: (value: T) => unknown, status: 200 | 202 = 200): Response {
  if (result.ok) return c.json(body(result.value) as object, status);
  const { code, message, ...details } = result.error;
  return c.json({ error: { code: code === 'invalid' ? 'invalid_request' : code, message, ...details } }, STATUS[code]);
}

/**
 * An optional JSON body: undefined when there is none; `null` (refused by the body's schema) when there is one that
 * is not JSON.
 */
async function optionalJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** No body reads as an empty object; a body that is not JSON stays `null`, for the schema to refuse. */
function orEmpty(body: unknown): unknown {
  return body === undefined ? {} : body;
}

/** The parsed JSON body, or undefined when it is not JSON. */
async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    return undefined;
  }
}
