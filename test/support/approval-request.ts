import { randomUUID } from 'node:crypto';
import type { Palaver } from '../../src/app.js';
import type { ApprovalDecider, ToolApproval } from '../../src/domain/approval.js';

const HOUR = 3_600_000;

/**
 * A request for approval as a waiting turn records it, on the real store: the person `name`'s conversation on the API
 * channel (one turn answered), their message asking for `tool` held by an open turn, and the request of that turn.
 */
export async function requestApproval(
  palaver: Pick<Palaver, 'chat' | 'store'>,
  request: { readonly name: string; readonly by: ApprovalDecider; readonly tool: string; readonly summary: string; readonly requestedAt?: number },
): Promise<ToolApproval> {
  const accountId = request.name.toLowerCase();
  const requestedAt = request.requestedAt ?? Date.now();
  const reply = await palaver.chat({ userId: accountId, text: `I am ${request.name}` });
  const session = await palaver.store.sessions.findById(reply.sessionId);
  if (session === undefined) throw new Error(`no session ${reply.sessionId}`);
  const owner = 'a-process-that-asked';
  const asked = await palaver.store.inbound.accept(
    {
      channel: 'api',
      conversationId: accountId,
      accountId,
      accountNamespace: 'api',
      userId: session.userId,
      sessionId: session.id,
      text: `please ${request.tool}`,
      messageId: null,
      dedupeKey: `asked:${accountId}:${request.tool}:${randomUUID()}`,
      correlationId: randomUUID(),
      languageHint: 'en',
      displayName: null,
      conversationKind: 'direct',
    },
    { owner, leaseMs: HOUR },
  );
  if (!asked.accepted) throw new Error('the message was accepted before');
  // The turn that waits: the decision joins its journal.
  const turnId = randomUUID();
  await palaver.store.turns.open({ id: turnId, sessionId: session.id, owner, inboundIds: [asked.record.id] });
  return palaver.store.approvals.request({
    id: randomUUID(),
    modelCalls: 0,
    turnId,
    callId: 'call-1',
    sessionId: session.id,
    userId: session.userId,
    channel: 'api',
    conversationId: accountId,
    accountId,
    accountNamespace: 'api',
    conversationKind: 'direct',
    tool: request.tool,
    arguments: '{"booking":42}',
    summary: request.summary,
    by: request.by,
    language: 'en',
    requestedAt: new Date(requestedAt),
    expiresAt: new Date(requestedAt + HOUR),
  });
}
