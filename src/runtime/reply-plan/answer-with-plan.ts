import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { FlowContext, FlowResult, ModelCall } from '../../domain/ports/flow.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import type { CheckedReplyPlan, ReplyPlan } from '../../domain/reply-actions.js';
import { toStorableText } from '../../domain/storable-text.js';
import { historyMessageIds } from '../context/history.js';
import { showableMessageId } from '../context/message-id-label.js';
import type { Answer } from '../turn/answer.js';
import { newErrorId } from '../error-id.js';
import type { ModelFailures } from '../flow-context.js';
import { withReplyFormat } from '../flows/reply-format.js';
import type { TurnScope } from '../turn/turn-context.js';
import { persistFailure } from '../turn/persist-reply.js';
import { checkReplyPlan, type ReplyPlanCheckOptions } from './check-plan.js';
import { planLimitsOf } from './plan-format.js';
import { REPLY_PLAN_OUTPUT } from './plan-schema.js';
import { persistPlan } from './persist-plan.js';

/** How much of a refused answer the audit record keeps, and the repair prompt shows back to the model. */
const MAX_REFUSED_CHARS = 4_000;
/** How much of a refused answer a log line shows. */
const LOG_PREVIEW_CHARS = 120;

/** What the turn hands over after the flow ran in actions mode. */
export interface PlanAnswerInput {
  readonly flow: FlowResult;
  /** The context the flow ran with: the repair call goes through it, so it is journaled and priced like any call. */
  readonly context: FlowContext;
  /** What the flow was shown: the history, then the new messages (the repair call sees it too). */
  readonly transcript: readonly ModelInputItem[];
  /** The channel message ids the model was shown: the only ones a plan may react to. */
  readonly recentMessageIds: ReadonlySet<string>;
  readonly failures: ModelFailures;
  readonly earlier: readonly StoredMessage[];
  readonly seenUpTo: number | undefined;
}

/**
 * The ids the model is shown in actions mode: the history's person messages that kept one, and the batch's.
 * Only ids safe to show count ({@link showableMessageId}).
 */
export function shownMessageIds(scope: TurnScope, earlier: readonly StoredMessage[]): ReadonlySet<string> {
  const ids = new Set(historyMessageIds(earlier));
  for (const { inbound } of scope.messages) {
    const id = showableMessageId(inbound.messageId);
    if (id !== undefined) ids.add(id);
  }
  return ids;
}

/**
 * The turn's answer in actions mode. The flow's answer is checked as a plan; one refused is logged, counted and kept as
 * an audit record, and the model is asked once more (without tools, shown what was wrong). A plan that passes is
 * stored and handed to delivery; when the repair fails too, the person gets nothing (`onInvalidActions: "silence"`,
 * stored as an `ignore`) or the apology (`"apologise"`). Nothing of a refused answer is ever sent.
 */
export async function answerWithPlan(scope: TurnScope, input: PlanAnswerInput): Promise<Answer> {
  const { flow, failures, earlier, seenUpTo } = input;
  const { capabilities } = scope.channel;
  const options: ReplyPlanCheckOptions = {
    limits: planLimitsOf(scope),
    recentMessageIds: input.recentMessageIds,
    ...(capabilities.reactionEmoji === undefined ? {} : { reactionEmoji: capabilities.reactionEmoji }),
  };
  const first = checkReplyPlan(flow.text, options);
  if (first.ok) return persistPlan(scope, flow, first.plan, failures, earlier, seenUpTo, [], []);

  const audit: NewMessage[] = [refused(scope, flow.text, first, 1, flow.modelCalls[flow.modelCalls.length - 1]?.model)];
  const repair = await askForRepair(scope, input, first.problem);
  const second = checkReplyPlan(repair.response.text, options);
  if (second.ok) {
    scope.log.info({ reason: first.reason }, 'reply actions repaired by the model');
    return persistPlan(scope, flow, second.plan, failures, earlier, seenUpTo, audit, [repair.record]);
  }
  audit.push(refused(scope, repair.response.text, second, 2, repair.record.model));
  if (scope.deps.replies.actions.onInvalidActions === 'apologise') {
    const errorId = newErrorId();
    scope.log.error({ errorId, reason: second.reason, problem: second.problem }, 'model answered with invalid reply actions twice; sending an apology instead');
    return persistFailure(scope, failures, errorId, audit);
  }
  scope.log.warn({ reason: second.reason, problem: second.problem }, 'model answered with invalid reply actions twice; sending nothing');
  const silence: ReplyPlan = { steps: [{ kind: 'ignore', reason: 'invalid model output' }] };
  return persistPlan(scope, flow, silence, failures, earlier, seenUpTo, audit, [repair.record]);
}

/** Logs and counts a refused answer, and makes its audit record (the raw output, cut): never shown, never sent. */
function refused(scope: TurnScope, output: string, check: Extract<CheckedReplyPlan, { ok: false }>, attempt: 1 | 2, model: string | undefined): NewMessage {
  const { reason, problem } = check;
  scope.deps.metrics.replyActionsInvalid.inc({ reason });
  scope.log.warn(
    { reason, problem, attempt, chars: output.length, preview: cut(output, LOG_PREVIEW_CHARS) },
    'model answer refused as reply actions; nothing of it is sent',
  );
  return {
    role: 'assistant',
    audience: 'audit',
    content: cut(output, MAX_REFUSED_CHARS),
    correlationId: scope.correlationId,
    ...(model === undefined ? {} : { model }),
    meta: { invalidReplyActions: { reason, problem, attempt } },
  };
}

/** The one repair: the model sees its refused answer and what is wrong with it, and answers again without tools. */
function askForRepair(scope: TurnScope, input: PlanAnswerInput, problem: string): Promise<ModelCall> {
  const { flow, context } = input;
  const items: ModelInputItem[] = [
    ...input.transcript,
    { type: 'message', role: 'assistant', content: cut(flow.text, MAX_REFUSED_CHARS) },
    {
      type: 'message',
      role: 'user',
      content: `(Palaver) Your last answer could not be used, and nothing of it was sent: ${problem}. Answer again with only the JSON object {"actions": [...]} as the instructions describe.`,
    },
  ];
  return context.callModel(
    {
      instructions: withReplyFormat(context.instructions(flow.state.role, flow.state), context.settings.replyFormat),
      input: items,
      tools: [],
      output: context.settings.replyFormat?.output ?? REPLY_PLAN_OUTPUT,
      correlationId: scope.correlationId,
      ...(scope.signal ? { signal: scope.signal } : {}),
    },
    items,
  );
}

/** At most `max` characters of model output, storable (a cut inside a surrogate pair leaves no half behind). */
function cut(text: string, max: number): string {
  return toStorableText(text.length <= max ? text : text.slice(0, max), 'drop');
}
