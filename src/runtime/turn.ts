import type { TurnOutcome } from '../domain/ports/channel.js';
import { newId } from '../domain/ids.js';
import { apologyFor } from './apology.js';
import { historyToInput } from './context/history.js';
import { parseUserState, rememberToolCalls } from './context/user-state.js';
import type { ModelCallRecord } from './flows/agent-loop.js';
import { runSingleFlow } from './flows/single-flow.js';
import type { TurnDependencies, TurnRequest, TurnScope } from './turn-context.js';
import { persistFailure, persistReply } from './turn-persistence.js';

export type { AgentSettings, TurnDependencies, TurnRequest } from './turn-context.js';

/**
 * Runs one turn: load the user's state and the conversation, run the flow, persist, reply.
 * A failure is logged with the correlation id and answered with a short apology in the person's language.
 */
export async function runTurn(deps: TurnDependencies, request: TurnRequest): Promise<TurnOutcome> {
  const scope: TurnScope = {
    deps,
    request,
    log: deps.logger.child({ correlationId: request.correlationId, sessionId: request.session.id, userId: request.user.id }),
    emit: request.onEvent ?? (() => {}),
    replyMessageId: newId(),
    state: await loadUserState(deps, request),
  };
  scope.emit({ type: 'turn_started', correlationId: request.correlationId, sessionId: request.session.id });

  try {
    // 1. Context: the recent conversation (the new messages are already stored, so they come last).
    const history = await deps.store.messages.listRecent(request.session.id, { limit: deps.agent.historyLimit + request.newMessages.length, audience: 'display' });
    const transcript = historyToInput(history);
    const newItems = historyToInput(request.newMessages);

    // 2. The flow: model ⇄ tools under the user's role.
    const flow = await runSingleFlow(scope, transcript, newItems);
    scope.state = { ...scope.state, role: flow.role, lastResponseId: flow.chainId };
    scope.state = rememberToolCalls(
      scope.state,
      flow.hostedToolCalls.map((call) => ({ name: `${call.serverLabel}.${call.name}`, arguments: call.arguments, ok: call.error === null, at: deps.now().toISOString() })),
    );

    // 3. The reply: model output is checked before it can reach the person.
    const text = flow.text.trim();
    if (!text) {
      scope.log.error({ models: flow.modelCalls.map((call) => call.model) }, 'model returned no text; sending an apology instead');
      return await fail(scope, flow.modelCalls);
    }

    // 4. Persist reply, audit records, usage and state together, then deliver.
    const usage = await persistReply(scope, flow, text);
    deps.metrics.turns.inc({ status: 'completed' });
    scope.emit({ type: 'reply', messageId: scope.replyMessageId, text });
    return outcome(scope, 'completed', text, usage);
  } catch (error) {
    scope.log.error({ err: error }, 'turn failed');
    return fail(scope, []);
  }
}

async function loadUserState(deps: TurnDependencies, request: TurnRequest) {
  const record = await deps.store.userState.get(request.user.id);
  const { state, problem } = parseUserState(record?.raw);
  if (problem) deps.logger.warn({ correlationId: request.correlationId, userId: request.user.id, problem }, 'user state unreadable; continuing with an empty state');
  return state;
}

async function fail(scope: TurnScope, modelCalls: readonly ModelCallRecord[]): Promise<TurnOutcome> {
  const apology = apologyFor(scope.request.language);
  const usage = await persistFailure(scope, apology, modelCalls);
  scope.deps.metrics.turns.inc({ status: 'failed' });
  scope.emit({ type: 'reply', messageId: scope.replyMessageId, text: apology });
  return outcome(scope, 'failed', apology, usage);
}

function outcome(scope: TurnScope, status: 'completed' | 'failed', reply: string, usage: { inputTokens: number; outputTokens: number; cost: string }): TurnOutcome {
  const { request, deps } = scope;
  return {
    correlationId: request.correlationId,
    sessionId: request.session.id,
    userId: request.user.id,
    reply,
    replyMessageId: scope.replyMessageId,
    status,
    usage: { ...usage, currency: deps.currency },
  };
}
