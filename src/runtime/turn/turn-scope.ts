import { newId } from '../../domain/ids.js';
import type { StoredMessage, SummaryRecord } from '../../domain/model.js';
import type { ProfileSettings } from '../../domain/profile.js';
import type { ReplyTarget, TurnProgress } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { boundHistory } from '../context/history.js';
import { buildUserAgentContext } from '../context/user-context.js';
import { parseUserState } from '../context/user-state.js';
import { replyModeFor } from '../reply-plan/reply-settings.js';
import { TurnJournal } from './turn-journal.js';
import type { TurnDependencies, TurnRequest, TurnScope } from './turn-context.js';

/**
 * Opens a turn for a batch: who is talking (the user context, built once), in which languages and zone (from their
 * profile), where the reply goes, and the user's state (from the cache, else the store; a corrupt row is logged and
 * replaced by an empty state).
 */
export async function openTurn(deps: TurnDependencies, request: TurnRequest): Promise<TurnScope> {
  const first = request.messages[0];
  const last = request.messages[request.messages.length - 1]!;
  const { channel, user, session } = first;
  const correlationId = first.inbound.correlationId;
  const [{ state, version }, profile] = await Promise.all([
    loadUserState(deps, first.user.id, correlationId),
    loadProfile(deps, first.user.id, last.inbound.languageHint, correlationId),
  ]);
  const userContext = buildUserAgentContext({
    user,
    settings: profile,
    role: state.role ?? deps.agent.defaultRole,
    displayName: last.inbound.displayName,
    group: last.inbound.conversationKind === 'shared',
  });
  const target: ReplyTarget = {
    channel: channel.name,
    conversationId: session.conversationId,
    accountId: first.inbound.accountId,
    inReplyTo: request.messages.flatMap(({ inbound }) => (inbound.messageId === null ? [] : [inbound.messageId])),
    correlationId,
    sessionId: session.id,
  };
  const billingCountry = profile.preferences.country ?? deps.billing.defaultCountry;
  const streams = channel.capabilities.streaming && channel.progress !== undefined;
  let log: Logger | undefined;
  const journalTurn = {
    sessionId: session.id,
    userId: user.id,
    correlationId,
    owner: request.lease.owner,
    inboundIds: request.messages.map(({ inbound }) => inbound.id),
    fence: request.fence,
    endClaim: request.endClaim,
  };
  const journal = request.resume ? await TurnJournal.resume(deps.store, request.resume, journalTurn) : TurnJournal.start(deps.store, newId(), journalTurn);
  const scope: TurnScope = {
    deps,
    channel,
    user,
    accounts: first.accounts,
    session,
    messages: request.messages,
    lease: request.lease,
    correlationId,
    language: profile.preferences.aiLanguage,
    interfaceLanguage: profile.preferences.interfaceLanguage,
    timeZone: profile.preferences.timeZone,
    billingCountry,
    currency: deps.billing.currencyOf(billingCountry, session),
    profile,
    userContext,
    target,
    replyMode: replyModeFor(deps.replies, channel.name),
    get log() {
      return (log ??= deps.logger.child({ correlationId, sessionId: session.id, userId: user.id }));
    },
    // One id for the turn and its reply: a resumed turn stores its reply under the id it streamed under.
    replyMessageId: journal.id,
    signal: request.messages.length === 1 ? first.signal : undefined,
    interrupt: request.interrupt,
    askAgain: request.askAgain,
    initialState: state,
    stateVersion: version,
    journal,
    progress(event: TurnProgress) {
      if (event.type === 'text_delta') {
        // Never more than a reply may hold (agent.maxReplyChars): a runaway model does not flood the person.
        const room = deps.agent.maxReplyChars - journal.streamedText.length;
        if (room <= 0) return;
        if (event.delta.length > room) event = { ...event, delta: event.delta.slice(0, room) };
      }
      journal.noteProgress(event);
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
 * The user's profile: from the cache, else the store. A person without one gets one seeded from the channel's
 * language hint, stored once (a profile written meanwhile, by another channel's first turn or an update, wins). A
 * stored profile that cannot be read, wholly or in some fields, is logged and counted, and the defaults stand in for
 * what could not be read; the row is left as it is for a person to look at (updates never overwrite it).
 */
export async function loadProfile(deps: TurnDependencies, userId: string, languageHint: string | null, correlationId: string): Promise<ProfileSettings> {
  const cached = deps.cache.profile(userId);
  if (cached) return cached;
  // Before the read: a change another process announces while it runs may not be in what it returns.
  const generation = deps.cache.generation;
  let record = await deps.store.profiles.get(userId);
  if (record === undefined) {
    const seeded = deps.profiles.seed(languageHint);
    if (await deps.store.profiles.saveIfAbsent(userId, JSON.stringify(seeded))) {
      deps.cache.rememberProfile(userId, seeded, generation);
      return seeded;
    }
    record = await deps.store.profiles.get(userId);
  }
  const { settings, problem, unreadable } = record === undefined ? { settings: deps.profiles.seed(languageHint) } : deps.profiles.parse(record.raw);
  if (problem !== undefined) {
    deps.logger.warn(
      { correlationId, userId, problem },
      unreadable ? 'profile unreadable; continuing with the default settings' : 'profile partly unreadable; continuing with the defaults for those fields',
    );
    deps.metrics.profileReadProblems.inc({ part: unreadable ? 'whole' : 'fields' });
  }
  deps.cache.rememberProfile(userId, settings, generation);
  return settings;
}

/**
 * The recent conversation before this turn, oldest first: `recent`, the newest stored display messages (at most
 * `historyLimit`), and `earlier`, those of them the model is sent: after the range of the conversation's summary
 * (when `agent.memory.summarize` wrote one, `summary`, read before them) and within the agent's token bound (the new
 * ones are still in the inbox; they join the conversation with the reply, outside these bounds). Cached or read by
 * one indexed query of at most `historyLimit` rows (and one for the summary), so it costs the same however long the
 * conversation has grown.
 */
export async function loadEarlierHistory(scope: TurnScope): Promise<EarlierHistory> {
  const { deps, session } = scope;
  const [recent, summary] = await Promise.all([
    deps.cache.history(session.id) ??
      deps.store.messages.listRecent(session.id, { limit: deps.agent.historyLimit, audience: 'display', sinceContextStart: true }),
    deps.summaries?.latest(deps, session.id),
  ]);
  // What the summary covers is read in it, not again as messages.
  const unsummarised = summary === undefined ? recent : recent.filter((message) => message.seq > summary.toSeq);
  return { recent, earlier: boundHistory(unsummarised, deps.agent), summary };
}

/** What {@link loadEarlierHistory} reads. */
export interface EarlierHistory {
  readonly recent: readonly StoredMessage[];
  readonly earlier: readonly StoredMessage[];
  /** The newest summary of the conversation's current context, if any. */
  readonly summary: SummaryRecord | undefined;
}
