import { newId } from '../domain/ids.js';
import type { StoredMessage } from '../domain/model.js';
import type { ReplyTarget, TurnProgress } from '../domain/ports/channel.js';
import type { Logger } from '../observability/logger.js';
import { parseUserState } from './context/user-state.js';
import type { TurnDependencies, TurnRequest, TurnScope } from './turn-context.js';

/**
 * Opens a turn for a batch: who is talking, in which language and zone, where the reply goes, and the user's state
 * (from the cache, else the store; a corrupt row is logged and replaced by an empty state).
 */
export async function openTurn(deps: TurnDependencies, request: TurnRequest): Promise<TurnScope> {
  const first = request.messages[0];
  const last = request.messages[request.messages.length - 1]!;
  const { channel, user, session } = first;
  const correlationId = first.inbound.correlationId;
  const { state, version } = await loadUserState(deps, first.user.id, correlationId);
  const target: ReplyTarget = {
    channel: channel.name,
    conversationId: session.conversationId,
    accountId: first.inbound.accountId,
    inReplyTo: request.messages.flatMap(({ inbound }) => (inbound.messageId === null ? [] : [inbound.messageId])),
    correlationId,
    sessionId: session.id,
  };
  const streams = channel.capabilities.streaming && channel.progress !== undefined;
  let log: Logger | undefined;
  let streamedText = '';
  const scope: TurnScope = {
    deps,
    channel,
    user,
    accounts: first.accounts,
    session,
    messages: request.messages,
    lease: request.lease,
    correlationId,
    language: last.inbound.languageHint ?? deps.agent.defaultLanguage,
    timeZone: deps.agent.defaultTimeZone,
    target,
    get log() {
      return (log ??= deps.logger.child({ correlationId, sessionId: session.id, userId: user.id }));
    },
    replyMessageId: newId(),
    signal: request.messages.length === 1 ? first.signal : undefined,
    initialState: state,
    stateVersion: version,
    toolRuns: new Map(),
    modelCalls: [],
    get streamedText() {
      return streamedText;
    },
    progress(event: TurnProgress) {
      if (event.type === 'text_delta') streamedText += event.delta;
      else if (event.type === 'tool_call' || event.type === 'discard') streamedText = '';
      if (!streams) return;
      try {
        channel.progress!(target, event);
      } catch (error) {
        scope.log.warn({ err: error, channel: channel.name }, 'channel failed to show progress');
      }
    },
  };
  return scope;
}

async function loadUserState(deps: TurnDependencies, userId: string, correlationId: string) {
  const cached = deps.cache.state(userId);
  if (cached) return cached;
  const record = await deps.store.userState.get(userId);
  const { state, problem } = parseUserState(record?.raw);
  if (problem) deps.logger.warn({ correlationId, userId, problem }, 'user state unreadable; continuing with an empty state');
  return { state, version: record?.version ?? 0 };
}

/**
 * The recent conversation before this turn, oldest first: the stored display messages (the new ones are still in
 * the inbox; they join the conversation with the reply).
 */
export async function loadEarlierHistory(scope: TurnScope): Promise<readonly StoredMessage[]> {
  const { deps, session } = scope;
  return deps.cache.history(session.id) ?? (await deps.store.messages.listRecent(session.id, { limit: deps.agent.historyLimit, audience: 'display', sinceContextStart: true }));
}
