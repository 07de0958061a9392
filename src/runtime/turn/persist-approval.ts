import type { ToolApproval } from '../../domain/approval.js';
import { newId } from '../../domain/ids.js';
import type { FlowResult } from '../../domain/ports/flow.js';
import { systemText } from '../../i18n/index.js';
import type { ModelFailures } from '../flow-context.js';
import { splitReply } from '../reply.js';
import type { Answer } from './answer.js';
import { closeTurn } from './close-turn.js';
import { inSessionCurrency, newMessages, outcome, replyMessage, usageOf } from './persist-reply.js';
import type { TurnScope } from './turn-context.js';

/** Default time a request waits for its decision: an hour. */
const DEFAULT_APPROVAL_TIMEOUT_MS = 60 * 60_000;

/**
 * Ends the turn's run at a tool call that needs someone's yes (`scope.journal.asking`): the reply is the question,
 * in the person's language, saying what will happen (the tool's description, never the model's words alone), and the
 * one closing write stores it with the person's messages, bills the model calls made so far, records the request
 * (holding what the person writes next until it is decided) and keeps the turn's journal. No model is called while
 * it waits. The decision (`ApprovalDecisions`) resumes the turn from its journal.
 *
 * A request an operator decides is still told to the person: they learn that the team checks it first.
 */
export function persistApprovalQuestion(scope: TurnScope, flow: FlowResult, failures: ModelFailures): Promise<Answer> {
  // The question is a message of its own: the turn's reply id stays for the answer that follows the decision.
  const asking: TurnScope = { ...scope, replyMessageId: newId() };
  return inSessionCurrency(asking, () => storeQuestion(asking, flow, failures));
}

async function storeQuestion(scope: TurnScope, flow: FlowResult, failures: ModelFailures): Promise<Answer> {
  const { deps, session } = scope;
  const { call, requirement } = scope.journal.asking!;
  const language = scope.interfaceLanguage;
  const { defaultLanguage } = deps.agent;
  const question = systemText(language, 'approval.question', { summary: requirement.summary }, defaultLanguage);
  const text =
    requirement.by === 'operator'
      ? `${question}\n${systemText(language, 'approval.byOperator', undefined, defaultLanguage)}`
      : scope.channel.capabilities.approvalButtons
        ? question
        : `${question}\n${systemText(language, 'approval.answerInWords', undefined, defaultLanguage)}`;
  const usage = await usageOf(scope, flow.modelCalls);
  const now = deps.now();
  const expiresAt = new Date(now.getTime() + (deps.agent.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS));
  const approvalId = newId();
  const parts = splitReply(text, scope.channel.capabilities.maxMessageChars);
  const first = scope.messages[0].inbound;
  const closed = await closeTurn(scope, {
    messages: [
      ...newMessages(scope),
      replyMessage(scope, text, usage, {
        approval: { id: approvalId, tool: call.name, by: requirement.by, expiresAt: expiresAt.toISOString() },
        models: [...new Set(flow.modelCalls.map((modelCall) => modelCall.model))],
        ...(failures.length > 0 ? { failures } : {}),
      }),
    ],
    session: { status: 'completed', usage: { ...usage, currency: scope.currency } },
    cost: usage.cost,
    // Only the person's request carries buttons: an operator's is decided elsewhere.
    outbox: parts.map((part, index) =>
      index === parts.length - 1 && requirement.by === 'person'
        ? { text: part, approval: { id: approvalId, expiresAt: expiresAt.toISOString() } }
        : { text: part },
    ),
    approval: {
      id: approvalId,
      turnId: scope.journal.id,
      callId: call.callId,
      sessionId: session.id,
      userId: scope.user.id,
      channel: scope.target.channel,
      conversationId: session.conversationId,
      accountId: scope.target.accountId,
      accountNamespace: first.accountNamespace,
      conversationKind: first.conversationKind,
      tool: call.name,
      arguments: call.arguments,
      summary: requirement.summary,
      by: requirement.by,
      language,
      requestedAt: now,
      expiresAt,
      modelCalls: scope.journal.modelCalls.length,
    },
  });
  deps.cache.forgetHistory(session.id);
  deps.metrics.addCost(scope.currency, usage.cost);
  deps.metrics.turns.inc({ status: 'completed' });
  const approval = closed.approval!;
  scope.log.info(
    { approvalId: approval.id, tool: call.name, by: requirement.by, expiresAt: approval.expiresAt.toISOString() },
    'tool call waits for approval; the turn goes on once it is decided',
  );
  return {
    outcome: outcome(scope, 'completed', text, usage),
    parts,
    deliveries: closed.deliveries,
    ...(requirement.by === 'person' ? { approval: { id: approval.id, expiresAt: approval.expiresAt.toISOString() } } : {}),
  };
}

/**
 * Answers words that said neither yes nor no to a waiting request: the person's messages join the conversation and
 * Palaver asks again, once, with the request's buttons where the channel has them; the request keeps waiting (the
 * next unclear answer declines it). No model is called.
 */
export async function persistAskAgain(scope: TurnScope, approval: ToolApproval): Promise<Answer> {
  const { deps } = scope;
  const usage = await usageOf(scope, []);
  const text = systemText(approval.language, 'approval.askAgain', { summary: approval.summary }, deps.agent.defaultLanguage);
  const parts = splitReply(text, scope.channel.capabilities.maxMessageChars);
  const request = { id: approval.id, expiresAt: approval.expiresAt.toISOString() };
  const { deliveries } = await closeTurn(scope, {
    messages: [
      ...newMessages(scope),
      replyMessage(scope, text, usage, {
        approval: { id: approval.id, tool: approval.tool, by: approval.by, expiresAt: approval.expiresAt.toISOString(), askedAgain: true },
      }),
    ],
    session: { status: 'completed' },
    outbox: parts.map((part, index) => (index === parts.length - 1 ? { text: part, approval: request } : { text: part })),
  });
  deps.cache.forgetHistory(scope.session.id);
  deps.metrics.turns.inc({ status: 'completed' });
  scope.log.info({ approvalId: approval.id }, 'answer to an approval question was unclear; asked again');
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries, approval: request };
}
