import type { FlowResult } from '../../domain/ports/flow.js';
import type { HandoffSource } from '../../domain/ports/store.js';
import { handoffNotice } from '../handoff/handoff-notice.js';
import type { ModelFailures } from '../flow-context.js';
import { splitReply } from '../reply.js';
import type { Answer } from './answer.js';
import { closeTurn } from './close-turn.js';
import { inSessionCurrency, newMessages, outcome, replyMessage, usageOf } from './persist-reply.js';
import type { TurnScope } from './turn-context.js';

/** Who asked for a person, and why. */
export interface HandoffRequest {
  readonly reason: string;
  readonly source: HandoffSource;
}

/**
 * Ends the turn by handing the conversation to a person: the reply is Palaver's own notice (a person will answer
 * here: shortly, or when the operators' hours begin, in the person's language and zone), and the one closing write
 * also pauses the agent, opens the handoff and records it in the operators' audit. `flow`: the flow that asked (the
 * model's `handoff` tool, a tool's `ctx.handoff`), whose tool records and model calls are kept and billed; absent
 * for a handoff phrase, which no model saw.
 *
 * After the commit, the channel's open pages learn the agent is paused, and `TurnDependencies.onHandoff` is told of
 * a handoff this turn opened.
 */
export function persistHandoff(
  scope: TurnScope,
  request: HandoffRequest,
  after?: { readonly flow: FlowResult; readonly failures: ModelFailures },
): Promise<Answer> {
  return inSessionCurrency(scope, () => storeHandoff(scope, request, after));
}

async function storeHandoff(
  scope: TurnScope,
  request: HandoffRequest,
  after: { readonly flow: FlowResult; readonly failures: ModelFailures } | undefined,
): Promise<Answer> {
  const { deps, session } = scope;
  const text = handoffNotice({
    language: scope.interfaceLanguage,
    defaultLanguage: deps.agent.defaultLanguage,
    timeZone: scope.timeZone,
    hours: deps.agent.handoff?.hours,
    now: deps.now(),
  });
  const calls = after?.flow.modelCalls ?? [];
  const usage = await usageOf(scope, calls);
  const parts = splitReply(text, scope.channel.capabilities.maxMessageChars);
  const closed = await closeTurn(scope, {
    messages: [
      ...newMessages(scope),
      ...(after?.flow.audit ?? []),
      replyMessage(scope, text, usage, {
        handoff: { reason: request.reason, source: request.source },
        ...(calls.length > 0 ? { models: [...new Set(calls.map((call) => call.model))] } : {}),
        ...(after !== undefined && after.failures.length > 0 ? { failures: after.failures } : {}),
      }),
    ],
    session: { status: 'completed', ...(calls.length > 0 ? { usage: { ...usage, currency: scope.currency } } : {}) },
    ...(after === undefined ? {} : { cost: usage.cost }),
    // The chain ends at a tool call the model never gets the result of: the next turn starts without it.
    ...(after === undefined ? {} : { state: () => ({ ...after.flow.state, responseChainId: null, responseChainAt: null }) }),
    outbox: parts.map((part) => ({ text: part })),
    handoff: request,
  });
  deps.cache.forgetHistory(session.id);
  if (closed.saved !== undefined) deps.cache.rememberState(scope.user.id, closed.saved);
  if (calls.length > 0) deps.metrics.addCost(scope.currency, usage.cost);
  deps.metrics.turns.inc({ status: 'completed' });
  const { handoff, opened, paused } = closed.handoff!;
  scope.log.info(
    { handoffId: handoff.id, source: request.source, opened },
    'conversation handed to a person: the agent is paused until an operator resumes it',
  );
  // Open pages show at once that a person answers now; after the commit, so a page that reads the state reads it paused.
  if (paused) scope.channel.showOperatorEvent?.({ conversationId: session.conversationId, sessionId: session.id }, { kind: 'paused', paused: true });
  if (opened) {
    try {
      deps.onHandoff?.(handoff);
    } catch (error) {
      scope.log.warn({ err: error, handoffId: handoff.id }, 'onHandoff failed; the handoff is stored and open all the same');
    }
  }
  return { outcome: outcome(scope, 'completed', text, usage), parts, deliveries: closed.deliveries };
}
