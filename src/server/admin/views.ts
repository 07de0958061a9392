import type { z } from 'zod';
import type { conversationSummary, toolCallView, transcriptMessage, transcriptSummary, userSummary } from '../../admin/api-contract.js';
import type { ConversationOverview, SummaryOverview, TranscriptRecord, UserOverview } from '../../domain/ports/operator-queries.js';
import { parseUserState } from '../../runtime/context/user-state.js';

// The store's read model as the admin API's JSON (src/admin/api-contract.ts): instants as ISO strings, money as
// decimal strings, and what operators read that the store leaves to the runtime (a role, who wrote a message).

export function userView(user: UserOverview): z.input<typeof userSummary> {
  const [main] = user.costs;
  return {
    id: user.id,
    displayName: user.displayName,
    phone: user.phone,
    role: parseUserState(user.stateJson ?? undefined).state.role,
    accounts: [...user.accounts],
    conversations: user.conversations,
    cost: main?.cost ?? '0',
    currency: main?.currency ?? null,
    costs: [...user.costs],
    createdAt: user.createdAt.toISOString(),
    lastActiveAt: user.lastActiveAt?.toISOString() ?? null,
  };
}

export function conversationView(conversation: ConversationOverview): z.input<typeof conversationSummary> {
  const { lastMessage } = conversation;
  return {
    sessionId: conversation.sessionId,
    channel: conversation.channel,
    conversationId: conversation.conversationId,
    title: conversation.title,
    user: conversation.user,
    status: conversation.status,
    paused: conversation.pausedAt !== null,
    endedAt: conversation.endedAt?.toISOString() ?? null,
    assignedTo: conversation.assignedTo,
    handoff:
      conversation.handoff === null
        ? null
        : {
            reason: conversation.handoff.reason,
            source: conversation.handoff.source,
            requestedAt: conversation.handoff.requestedAt.toISOString(),
            takenBy: conversation.handoff.takenBy,
          },
    lastMessage: lastMessage === null ? null : { role: lastMessage.role, text: lastMessage.text, at: lastMessage.at.toISOString() },
    waiting: conversation.waiting,
    cost: conversation.cost,
    currency: conversation.currency,
    inputTokens: conversation.inputTokens,
    outputTokens: conversation.outputTokens,
    createdAt: conversation.createdAt.toISOString(),
    updatedAt: conversation.updatedAt.toISOString(),
  };
}

export function transcriptSummaryView(summary: SummaryOverview): z.input<typeof transcriptSummary> {
  return {
    version: summary.version,
    fromSeq: summary.fromSeq,
    toSeq: summary.toSeq,
    text: summary.text,
    model: summary.model,
    inputTokens: summary.inputTokens,
    outputTokens: summary.outputTokens,
    cost: summary.cost,
    currency: summary.currency,
    at: summary.createdAt.toISOString(),
    current: summary.current,
  };
}

export function transcriptMessageView(message: TranscriptRecord): z.input<typeof transcriptMessage> {
  const toolCalls = toolCallsOf(message);
  return {
    id: message.id,
    seq: message.seq,
    role: message.role,
    audience: message.audience,
    text: message.content,
    at: message.createdAt.toISOString(),
    correlationId: message.correlationId,
    model: message.model,
    cost: message.cost,
    author: authorOf(message),
    ...(toolCalls === undefined ? {} : { toolCalls }),
  };
}

/** Who wrote a message, from its role and the marks the runtime puts in its `meta`. */
function authorOf(message: TranscriptRecord): z.input<typeof transcriptMessage>['author'] {
  const meta = message.meta ?? {};
  if (message.role === 'user') return 'person';
  // A note an operator left for the agent on handing the conversation back (never shown to the person).
  if (message.role === 'system') return meta['operatorNote'] === true ? 'operator' : 'palaver';
  // Sent by an operator as the agent (`POST /admin/conversations/:id/messages`).
  if (meta['author'] === 'operator' || meta['operator'] !== undefined) return 'operator';
  // An apology for a failed turn, a spend cap's notice, a reset's confirmation, a handoff's notice: Palaver's own words.
  if (meta['error'] === true || meta['budget'] !== undefined || meta['reset'] === true || meta['handoff'] !== undefined) return 'palaver';
  return 'agent';
}

/**
 * The tool call an audit record is about (`toolAuditRecords`): its arguments, its result (the record's text), how it
 * ended and how long it ran (absent for a call refused before it ran).
 */
function toolCallsOf(message: TranscriptRecord): z.input<typeof toolCallView>[] | undefined {
  if (message.role !== 'tool' || message.toolCalls === null) return undefined;
  const meta = message.meta ?? {};
  const failed = meta['isError'] === true;
  const duration = meta['durationMs'];
  return message.toolCalls.map((call) => ({
    callId: call.callId,
    name: call.name,
    arguments: call.arguments,
    status: failed ? 'failed' : 'succeeded',
    result: message.content,
    latencyMs: typeof duration === 'number' && Number.isFinite(duration) ? Math.round(duration) : null,
    error: failed ? message.content : null,
  }));
}
