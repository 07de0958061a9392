import type { StoredMessage } from '../../domain/model.js';
import type { SummaryBacklog } from '../../domain/ports/store.js';
import type { HistoryBounds } from './history.js';

// When a conversation's older part is summarised, and how much of it one summary call reads. Plain functions.

/** `agent.memory.summarize` as the runtime reads it. */
export interface SummarizeSettings {
  /** A summary is due once the unsummarised messages older than the newest `keepRecentMessages` estimate more than this. */
  readonly afterTokens: number;
  readonly keepRecentMessages: number;
}

/**
 * Whether a new summary is due: there are older messages to cover and either they estimate more than `afterTokens`,
 * or the messages no summary covers no longer fit the history a turn sends (`historyLimit`, `historyTokenLimit`),
 * so that the oldest of them would reach the model neither as themselves nor in a summary.
 */
export function summaryDue(backlog: SummaryBacklog, settings: SummarizeSettings, bounds: HistoryBounds): boolean {
  if (backlog.older.messages === 0) return false;
  if (backlog.older.tokens > settings.afterTokens) return true;
  if (backlog.unsummarised.messages > bounds.historyLimit) return true;
  return bounds.historyTokenLimit > 0 && backlog.unsummarised.tokens > bounds.historyTokenLimit;
}

/** Most messages one summary call reads; a longer backlog is caught up one version per turn, oldest first. */
export const SUMMARY_MAX_MESSAGES = 1_000;

/** Most estimated tokens of messages one summary call reads (the previous summary comes on top). */
export const SUMMARY_MAX_INPUT_TOKENS = 24_000;

/**
 * The messages one summary call covers: the oldest of `messages` (oldest first) within {@link SUMMARY_MAX_INPUT_TOKENS},
 * and always the first, however long, so a backlog always moves on.
 */
export function summaryChunk(messages: readonly StoredMessage[], maxTokens = SUMMARY_MAX_INPUT_TOKENS): readonly StoredMessage[] {
  let tokens = 0;
  let end = 0;
  while (end < messages.length) {
    tokens += messages[end]!.tokenEstimate;
    if (tokens > maxTokens && end > 0) break;
    end += 1;
  }
  return end === messages.length ? messages : messages.slice(0, end);
}
