import type { TurnOutcome } from '../../domain/ports/channel.js';
import { FencedOut, TurnError } from '../../domain/errors.js';
import { systemText } from '../../i18n/index.js';
import { BudgetExceeded, settleAbandonedTurn } from '../budget.js';
import { withImageData } from '../context/attached-images.js';
import { historyToInput, newMessagesToInput } from '../context/history.js';
import { showableMessageId } from '../context/message-id-label.js';
import { isResetTrigger } from '../context/reset.js';
import { chainContinues } from '../context/response-chain.js';
import { summaryToInput } from '../context/summary-prompt.js';
import type { Answer } from './answer.js';
import { startDelivery } from './deliver.js';
import { newErrorId } from '../error-id.js';
import { createFlowContext, type ModelFailures } from '../flow-context.js';
import { answerWithPlan, shownMessageIds } from '../reply-plan/answer-with-plan.js';
import { checkReply } from '../reply.js';
import type { TurnDependencies, TurnRequest, TurnScope } from './turn-context.js';
import { handoffPhraseIn } from '../handoff/handoff-phrases.js';
import { persistApprovalQuestion, persistAskAgain } from './persist-approval.js';
import { persistHandoff } from './persist-handoff.js';
import { persistRateLimited, stoppedByRateLimit } from './persist-rate-limited.js';
import { apologyText, persistBudgetNotice, persistFailure, persistReply, persistReset, usageOf } from './persist-reply.js';
import { loadEarlierHistory, openTurn } from './turn-scope.js';

export type { AgentSettings, TurnDependencies, TurnRequest } from './turn-context.js';

/**
 * One turn: answers a batch of stored messages of one conversation with one reply, delivered once.
 * A failure is logged with the correlation id and answered with a short apology in the person's language; the
 * reply (or apology) is stored before it is sent. Resolves with the outcome, or undefined when nothing could be
 * stored and so nothing was sent.
 * @throws FencedOut when another process took the conversation over meanwhile: this turn stored and sent nothing.
 */
export async function runTurn(deps: TurnDependencies, request: TurnRequest): Promise<TurnOutcome | undefined> {
  // 1. Context: who is talking, their state; typing shown and messages marked read where the channel can.
  const scope = await openTurn(deps, request);
  const delivery = startDelivery(scope);
  let answer: Answer;
  try {
    answer = request.attemptsExhausted ? await apologise(scope) : await answerTurn(scope);
  } catch (error) {
    if (error instanceof FencedOut) {
      delivery.abandon();
      await settleAbandoned(scope);
      throw error;
    }
    const errorId = newErrorId();
    scope.log.error({ err: error, errorId }, 'turn failed and could not be stored; nothing was sent');
    await settleAbandoned(scope);
    // The store's own words (a driver error) are for the log, never for the person: they get the apology.
    delivery.fail(
      new TurnError(apologyText(scope, errorId, ' '), { correlationId: scope.correlationId, conversationId: scope.session.conversationId }, { cause: error }),
    );
    return undefined;
  }
  // 5. Hand the stored reply to the channel, part by part.
  try {
    return await delivery.deliver(answer);
  } finally {
    // 6. Then, in the background, the conversation's older part is summarised when that is due (agent.memory.summarize).
    scope.deps.summaries?.afterTurn(scope);
  }
}

/**
 * A turn that ends without its closing transaction still paid for its model calls: what its journal did not keep is
 * recorded as spend and its budget claim goes (see `settleAbandonedTurn`). Best effort: when the store fails here
 * too, the claim stays until the turn's message is answered or its process stops.
 */
async function settleAbandoned(scope: TurnScope): Promise<void> {
  try {
    await settleAbandonedTurn(scope, (await usageOf(scope, scope.journal.unkeptModelCalls)).cost);
  } catch (error) {
    scope.log.error({ err: error }, 'could not record the spend of a turn that ended without its reply');
  }
}

/** The answer to messages whose turns kept failing: the apology, stored, with no model call. */
function apologise(scope: TurnScope): Promise<Answer> {
  const errorId = newErrorId();
  scope.log.error(
    { errorId, attempts: Math.max(...scope.messages.map(({ inbound }) => inbound.attempts)) },
    'giving up on the message after its turns failed inbox.maxTurnAttempts times; answering with an apology',
  );
  return persistFailure(scope, [], errorId);
}

async function answerTurn(scope: TurnScope): Promise<Answer> {
  const failures: ModelFailures = [];
  try {
    // Messages a per-person rate limit stopped never reach a model.
    if (stoppedByRateLimit(scope)) return await persistRateLimited(scope);
    // An answer to an approval question that says neither yes nor no: asked again, once, no model asked.
    if (scope.askAgain !== undefined) return await persistAskAgain(scope, scope.askAgain);
    // A reset trigger is answered by Palaver itself: no model call, no flow.
    const newest = scope.messages[scope.messages.length - 1]!.inbound.text;
    if (isResetTrigger(newest, scope.deps.agent.resetTriggers)) return await persistReset(scope);
    // So is a handoff phrase ("operator", "живой человек"): the conversation goes to a person, no model asked.
    const phrase = handoffPhraseIn(newest, scope.deps.agent.handoff?.phrases ?? []);
    if (phrase !== undefined) return await persistHandoff(scope, { reason: phrase, source: 'phrase' });
    // 2. The flow (the agent loop, or stages) over the recent conversation and the new messages.
    const { recent, earlier, summary } = await loadEarlierHistory(scope);
    const state = chainContinues(scope.initialState, scope.session.id, recent)
      ? scope.initialState
      : { ...scope.initialState, responseChainId: null, responseChainAt: null };
    if (state !== scope.initialState && scope.initialState.responseChainId !== null) {
      scope.log.info(
        { chainSessionId: scope.initialState.responseChainAt?.sessionId ?? null },
        'response chain not continued: it belongs to another conversation or has not seen its newest messages',
      );
    }
    // In a group every message is labelled with its sender (the user context's), so no member's words pass as another's.
    // In actions mode each of the person's messages shows its channel id: the ones a plan may react to.
    const { sender } = scope.userContext;
    const actions = scope.replyMode === 'actions';
    // With agent.historyTimes each of the person's messages shows when it was written, in their zone.
    const timeZone = scope.deps.agent.historyTimes ? scope.timeZone : undefined;
    const newTexts = scope.messages.map((message) => message.inbound.text);
    const newInput = newMessagesToInput(
      scope.messages.map(({ inbound }) => ({
        text: inbound.text,
        messageId: actions ? showableMessageId(inbound.messageId) : undefined,
        at: inbound.receivedAt,
        attachments: inbound.attachments,
      })),
      sender ?? undefined,
      timeZone,
    );
    // Attached images get their bytes now, the newest few only (see ../context/attached-images.ts).
    // The conversation's summary (agent.memory.summarize) comes first: it stands for what the history no longer holds.
    const earlierInput = [...(summary === undefined ? [] : [summaryToInput(summary)]), ...historyToInput(earlier, sender !== null, actions, timeZone)];
    const input = await withImageData([...earlierInput, ...newInput], scope.deps.store.attachments);
    const history = input.slice(0, earlierInput.length);
    const newItems = input.slice(earlierInput.length);
    const context = createFlowContext(scope, failures);
    const flow = await scope.deps.flow.run(
      {
        user: scope.user,
        session: scope.session,
        correlationId: scope.correlationId,
        language: scope.language,
        timeZone: scope.timeZone,
        history,
        newItems,
        newTexts,
        state,
        ...(scope.signal ? { signal: scope.signal } : {}),
      },
      context,
    );
    // A tool handed the conversation to a person: Palaver's notice is the reply, whatever the model wrote.
    if (flow.handoff !== undefined) return await persistHandoff(scope, flow.handoff, { flow, failures });
    // A tool call waits for someone's yes: the question is the reply, and the turn goes on once it is decided.
    if (scope.journal.asking !== undefined) return await persistApprovalQuestion(scope, flow, failures);
    const seenUpTo = recent[recent.length - 1]?.seq;
    // 3–4. Replies as actions: the answer is a plan, checked (one repair allowed), stored, then carried out.
    if (actions)
      return await answerWithPlan(scope, {
        flow,
        context,
        transcript: [...history, ...newItems],
        recentMessageIds: shownMessageIds(scope, earlier),
        failures,
        earlier,
        seenUpTo,
      });
    // 3. The reply: model output is checked before it can reach the person, and split to the channel's limit.
    const { maxReplyChars, defaultLanguage } = scope.deps.agent;
    const reply = checkReply(flow.text, scope.channel.capabilities, {
      maxChars: maxReplyChars,
      notice: () => systemText(scope.interfaceLanguage, 'reply.cut', undefined, defaultLanguage),
    });
    if (reply.ok && reply.cutFrom !== undefined) {
      scope.deps.metrics.repliesCut.inc();
      scope.log.warn({ chars: reply.cutFrom, maxReplyChars }, 'model reply longer than agent.maxReplyChars; cut');
    }
    if (!reply.ok) {
      const errorId = newErrorId();
      scope.log.error(
        { errorId, models: flow.modelCalls.map((call) => call.model), problem: reply.problem },
        'model output refused; sending an apology instead',
      );
      return await persistFailure(scope, failures, errorId);
    }
    // 4. Persist reply, audit records, usage and state together.
    return await persistReply(scope, flow, reply.text, reply.parts, failures, earlier, seenUpTo);
  } catch (error) {
    // Another process owns the conversation now: nothing more of this turn may be stored, not even an apology.
    if (error instanceof FencedOut) throw error;
    // A model call could have crossed a spend cap, so it was not made: not a failure, the person is told why (and
    // what the turn spent before is recorded).
    if (error instanceof BudgetExceeded) {
      scope.log.info({ budget: error.budget }, error.message);
      return persistBudgetNotice(scope, failures, error.budget);
    }
    const errorId = newErrorId();
    scope.log.error({ err: error, errorId }, 'turn failed');
    return persistFailure(scope, failures, errorId);
  }
}
