import type { StoredMessage } from '../domain/model.js';
import type { TurnOutcome } from '../domain/ports/channel.js';
import type { ModelInputItem } from '../domain/ports/model-provider.js';
import type { Logger } from '../observability/logger.js';
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
  // Set when the new messages could not be stored: the turn then ends with that error, not with an apology.
  let notStored: { readonly error: unknown } | undefined;
  const newMessagesStored = request.stored.catch((error: unknown) => {
    notStored = { error };
    throw error;
  });
  newMessagesStored.catch(() => {}); // awaited below; until then a failure is not unhandled
  const { state, version } = await loadUserState(deps, request);
  let log: Logger | undefined;
  const scope: TurnScope = {
    deps,
    request,
    // Made on first use: most turns log nothing of their own.
    get log() {
      return (log ??= deps.logger.child({ correlationId: request.correlationId, sessionId: request.session.id, userId: request.user.id }));
    },
    emit: request.onEvent ?? (() => {}),
    newMessagesStored,
    replyMessageId: newId(),
    state,
    stateVersion: version,
    toolRuns: new Map(),
  };
  scope.emit({ type: 'turn_started', correlationId: request.correlationId, sessionId: request.session.id });

  try {
    // 1. Context: the recent conversation, then the new messages.
    const earlier = await loadEarlierHistory(scope);
    const newItems = request.newTexts.map((content): ModelInputItem => ({ type: 'message', role: 'user', content }));

    // 2. The flow: model ⇄ tools under the user's role.
    const flow = await runSingleFlow(scope, [...historyToInput(earlier), ...newItems], newItems);
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
    const usage = await persistReply(scope, flow, text, earlier);
    deps.metrics.turns.inc({ status: 'completed' });
    scope.emit({ type: 'reply', messageId: scope.replyMessageId, text });
    return outcome(scope, 'completed', text, usage);
  } catch (error) {
    if (notStored) throw notStored.error;
    scope.log.error({ err: error }, 'turn failed');
    return fail(scope, []);
  }
}

async function loadUserState(deps: TurnDependencies, request: TurnRequest) {
  const cached = deps.cache.state(request.user.id);
  if (cached) return cached;
  const record = await deps.store.userState.get(request.user.id);
  const { state, problem } = parseUserState(record?.raw);
  if (problem) deps.logger.warn({ correlationId: request.correlationId, userId: request.user.id, problem }, 'user state unreadable; continuing with an empty state');
  return { state, version: record?.version ?? 0 };
}

/** The recent display messages before the new ones, oldest first. */
async function loadEarlierHistory(scope: TurnScope): Promise<readonly StoredMessage[]> {
  const { deps, request } = scope;
  const cached = deps.cache.history(request.session.id);
  if (cached) return cached;
  // From the store, once the new messages are in it: the latest ones, without the new.
  const newIds = new Set((await scope.newMessagesStored).map((message) => message.id));
  const recent = await deps.store.messages.listRecent(request.session.id, { limit: deps.agent.historyLimit + newIds.size, audience: 'display' });
  return recent.filter((message) => !newIds.has(message.id));
}

async function fail(scope: TurnScope, modelCalls: readonly ModelCallRecord[]): Promise<TurnOutcome> {
  // The apology answers a stored message; if it could not be stored, the caller gets the store's error instead.
  await scope.newMessagesStored;
  // The store is the truth after a failure: the next turn reloads what it needs.
  scope.deps.cache.forgetHistory(scope.request.session.id);
  scope.deps.cache.forgetState(scope.request.user.id);
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
