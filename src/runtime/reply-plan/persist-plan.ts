import { newId } from '../../domain/ids.js';
import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { FlowResult, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ReplyPlan, ReplyStep } from '../../domain/reply-actions.js';
import { chainPointAfter } from '../context/response-chain.js';
import type { Answer, PlanToRun } from '../turn/answer.js';
import type { ModelFailures } from '../flow-context.js';
import type { TurnScope } from '../turn/turn-context.js';
import { inSessionCurrency, newMessages, outcome, usageOf } from '../turn/persist-reply.js';
import { closeTurn } from '../turn/close-turn.js';
import { UNANSWERED_NOTE } from './model-notes.js';

/**
 * Stores a checked reply plan in one transaction, before any of it is carried out: the person's new messages, the
 * flow's audit records (and `extraAudit`, e.g. a refused first answer and its repair), the plan itself as an audit
 * record (`meta.replyPlan`), one display message per send step (the first under the turn's reply id), and — for a
 * channel that delivers offline — one outbox record per step with an effect outside (sends and reactions) in plan
 * order, so a crash at any point leaves exactly the rest to be carried out. Usage and cost (with `extraModelCalls`),
 * the budget, the user's state and the inbox's "answered" mark go in the same transaction, as for a text reply.
 *
 * A plan that sends nothing (`ignore`, or only a reaction) still answers the person's messages: the last of them is
 * stored with `meta.replyNote: "unanswered"`, which the model's history renders as "(you chose not to answer)" and
 * nothing shows the person (see ./model-notes.ts).
 */
export function persistPlan(
  scope: TurnScope,
  flow: FlowResult,
  plan: ReplyPlan,
  failures: ModelFailures,
  earlier: readonly StoredMessage[],
  seenUpTo: number | undefined,
  extraAudit: readonly NewMessage[],
  extraModelCalls: readonly ModelCallRecord[],
): Promise<Answer> {
  return inSessionCurrency(scope, () => storePlan(scope, flow, plan, failures, earlier, seenUpTo, extraAudit, extraModelCalls));
}

async function storePlan(
  scope: TurnScope,
  flow: FlowResult,
  plan: ReplyPlan,
  failures: ModelFailures,
  earlier: readonly StoredMessage[],
  seenUpTo: number | undefined,
  extraAudit: readonly NewMessage[],
  extraModelCalls: readonly ModelCallRecord[],
): Promise<Answer> {
  const { deps } = scope;
  const modelCalls = [...flow.modelCalls, ...extraModelCalls];
  const usage = await usageOf(scope, modelCalls);
  const sends = plan.steps.flatMap((step) => (step.kind === 'send' ? [step] : []));
  // The turn's reply id names its first message (what streaming and the channel already know), or the plan itself
  // when nothing is sent, so the outcome always points at a stored record.
  const displayIds = sends.map((_, index) => (index === 0 ? scope.replyMessageId : newId()));
  const planRecord: NewMessage = {
    ...(sends.length === 0 ? { id: scope.replyMessageId } : {}),
    role: 'assistant',
    audience: 'audit',
    content: JSON.stringify({ replyPlan: plan.steps }),
    model: modelCalls[modelCalls.length - 1]?.model ?? deps.models.primary.model,
    // The plan is the model's answer: the turn's tokens and cost are stored on it.
    ...usage,
    currency: scope.currency,
    correlationId: scope.correlationId,
    meta: {
      replyPlan: plan.steps,
      fallback: modelCalls.some((call) => call.fallback),
      paths: modelCalls.map((call) => call.path),
      models: [...new Set(modelCalls.map((call) => call.model))],
      ...(failures.length > 0 ? { failures } : {}),
    },
  };
  const displays: NewMessage[] = sends.map((step, index) => ({
    id: displayIds[index]!,
    role: 'assistant',
    audience: 'display',
    content: step.text,
    currency: scope.currency,
    correlationId: scope.correlationId,
    meta: { replyPart: index, ...(step.replyTo === null ? {} : { replyTo: step.replyTo }) },
  }));
  const incoming = newMessages(scope);
  if (sends.length === 0) {
    const last = incoming[incoming.length - 1]!;
    incoming[incoming.length - 1] = { ...last, meta: { ...last.meta, replyNote: UNANSWERED_NOTE } };
  }
  const { stored, saved, deliveries } = await closeTurn(scope, {
    messages: [...incoming, ...flow.audit, ...extraAudit, planRecord, ...displays],
    session: { status: 'completed', usage: { ...usage, currency: scope.currency } },
    // The inbox points at the first message sent (a duplicate is answered with it), else at the plan.
    answeredBy: (stored) => stored.find((message) => message.id === scope.replyMessageId)!,
    cost: usage.cost,
    state: (stored) => ({ ...flow.state, responseChainAt: flow.state.responseChainId === null ? null : chainPointAfter(scope.session.id, stored, seenUpTo) }),
    // Every send and reaction of the plan, in plan order, as the parts of the turn's one reply: recovery after a crash
    // carries out the rest in order, each once.
    outbox: plan.steps
      .filter(hasEffect)
      .map((step) =>
        step.kind === 'send' ? { text: step.text, replyTo: step.replyTo } : { text: '', reaction: { emoji: step.emoji, messageId: step.messageId } },
      ),
    // The plan is carried out after this write, paced by its waits: the conversation stays this turn's until it is done.
    keepsClaim: true,
  });
  const { version, state } = saved!;
  deps.cache.rememberState(scope.user.id, { version, state });
  const followsOn = chainPointAfter(scope.session.id, stored, seenUpTo) !== null;
  if (!followsOn || flow.state.role !== (scope.initialState.role ?? deps.agent.defaultRole)) deps.cache.forgetHistory(scope.session.id);
  else deps.cache.rememberHistory(scope.session.id, [...earlier, ...stored.filter((message) => message.audience === 'display')]);
  deps.metrics.turns.inc({ status: 'completed' });
  const run: PlanToRun = { steps: plan.steps, displayIds, deliveries };
  // What will be sent; delivery replaces it with what was sent.
  const text = sends.map((step) => step.text).join('\n\n');
  return { outcome: outcome(scope, 'completed', text, usage), parts: sends.map((step) => step.text), deliveries, plan: run };
}

/** A step that leaves the system: a message or a reaction. Waits and typing are only pacing. */
export function hasEffect(step: ReplyStep): step is Extract<ReplyStep, { kind: 'send' | 'react' }> {
  return step.kind === 'send' || step.kind === 'react';
}
