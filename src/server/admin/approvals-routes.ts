import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { approvalsQuery, declineBody, type approvalDecided, type approvals, type approvalView } from '../../admin/api-contract.js';
import type { ApprovalDecision, ToolApproval } from '../../domain/approval.js';
import type { ApprovalOutcome } from '../../domain/ports/channel.js';
import type { ApprovalRepository } from '../../domain/ports/store.js';
import { errorBody } from '../../platform/error-body.js';
import { principalOf } from '../admin-guard.js';
import { parseQuery } from './request-query.js';

/** An operator deciding: the name the audit records (the account's, or `admin`) and the operator account, if any. */
export interface OperatorDecider {
  readonly kind: 'operator';
  readonly name: string;
  readonly operatorId: string | null;
}

/** Takes a decision on a request (`Pipeline.approvals.decide`, narrowed to what an operator does). */
export type DecideApproval = (
  approvalId: string,
  decision: ApprovalDecision,
  actor: OperatorDecider,
  options: { readonly reason: string | null },
) => Promise<ApprovalOutcome>;

export interface ApprovalsRoutesOptions {
  /** The requests (`Store.approvals`), for the list. */
  readonly approvals: Pick<ApprovalRepository, 'list'>;
  /** Decides one; `(id, decision, actor, options) => pipeline.approvals.decide(id, decision, actor, options)`. */
  readonly decide: DecideApproval;
}

/**
 * Tool calls that wait for a decision, mounted under `/admin`:
 *
 * - `GET  /admin/approvals?status=&limit=`   requests, newest first (every one, or those of a `status`)
 * - `POST /admin/approvals/:id/approve`      decides a request an operator decides (`by: operator`)
 * - `POST /admin/approvals/:id/decline`      the same, with an optional `{ reason }`
 *
 * A decision answers 200 `{ id, status }`; 409 `conflict` with the `status` that stands when it was decided before
 * (by another operator, another process) or `expired` when its time ran out; 403 `forbidden` for a person's request
 * (only the person decides it, in their chat); 404 for an unknown id. The decision is taken once across processes,
 * audited with the caller as its actor (`principalOf`), and the waiting turn goes on from its journal.
 */
export function approvalsRoutes(options: ApprovalsRoutesOptions): Hono {
  const app = new Hono();

  app.get('/approvals', async (c) => {
    const query = parseQuery(c, approvalsQuery);
    if (!query.ok) return query.response;
    const found = await options.approvals.list({ ...(query.value.status === undefined ? {} : { status: query.value.status }), limit: query.value.limit });
    return c.json({ approvals: found.map(toApprovalView) } satisfies z.input<typeof approvals>);
  });

  app.post('/approvals/:id/approve', (c) => decide(c, 'approved', null));

  app.post('/approvals/:id/decline', async (c) => {
    const body = declineBody.safeParse(await optionalJsonBody(c));
    if (!body.success) return c.json(errorBody('invalid_request', 'Send no body, or { "reason": "<why>" } with 1 to 1 000 characters.'), 400);
    return decide(c, 'declined', body.data.reason ?? null);
  });

  async function decide(c: Context, decision: ApprovalDecision, reason: string | null): Promise<Response> {
    const id = c.req.param('id') ?? '';
    const { actor, operatorId } = principalOf(c);
    const outcome = await options.decide(id, decision, { kind: 'operator', name: actor, operatorId: operatorId ?? null }, { reason });
    switch (outcome.kind) {
      case 'decided':
        return c.json({ id, status: outcome.status } satisfies z.input<typeof approvalDecided>);
      case 'already':
        return c.json({ ...errorBody('conflict', `This request was already ${outcome.status}; nothing changed.`), status: outcome.status }, 409);
      case 'expired':
        return c.json({ ...errorBody('conflict', 'This request expired before a decision (it counts as declined); nothing changed.'), status: 'expired' }, 409);
      case 'refused':
        return c.json(errorBody('forbidden', "This request is the person's to decide, in their chat: an operator cannot approve or decline it."), 403);
      case 'not_found':
        return c.json(errorBody('not_found', `There is no approval request ${JSON.stringify(id)}; see GET /admin/approvals.`), 404);
    }
  }

  return app;
}

/** A request as the admin API shows it (`approvalView`): the call's arguments and the asking turn stay inside. */
export function toApprovalView(approval: ToolApproval): z.input<typeof approvalView> {
  return {
    id: approval.id,
    tool: approval.tool,
    summary: approval.summary,
    by: approval.by,
    status: approval.status,
    sessionId: approval.sessionId,
    userId: approval.userId,
    channel: approval.channel,
    conversationId: approval.conversationId,
    requestedAt: approval.requestedAt.toISOString(),
    expiresAt: approval.expiresAt.toISOString(),
    decidedAt: approval.decidedAt?.toISOString() ?? null,
    decidedBy: approval.decidedBy,
    reason: approval.reason,
  };
}

/** No body reads as `{}`; a body that is not JSON as `null`, for the schema to refuse. */
async function optionalJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
