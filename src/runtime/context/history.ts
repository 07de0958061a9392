import type { StoredMessage } from '../../domain/model.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';

/**
 * The conversation the model sees: display messages only (audit records, tool traffic and hidden context stay
 * out), as plain user/assistant turns.
 */
export function historyToInput(messages: readonly StoredMessage[]): ModelInputItem[] {
  const items: ModelInputItem[] = [];
  for (const message of messages) {
    if (message.audience !== 'display') continue;
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    items.push({ type: 'message', role: message.role, content: message.content });
  }
  return items;
}

/** How much earlier history a turn sends: by message count and by estimated tokens (0: no token bound). */
export interface HistoryBounds {
  readonly historyLimit: number;
  readonly historyTokenLimit: number;
}

/**
 * The newest of `messages` (oldest first) that fit both bounds, oldest first, never cutting a message in half: the
 * walk back stops at the first message that would cross the token bound, so the history stays contiguous. Looks at
 * no more than `historyLimit` messages, whatever the conversation's length.
 */
export function boundHistory(messages: readonly StoredMessage[], bounds: HistoryBounds): readonly StoredMessage[] {
  const { historyLimit, historyTokenLimit } = bounds;
  const oldest = Math.max(0, messages.length - historyLimit);
  if (historyTokenLimit === 0) return oldest === 0 ? messages : messages.slice(oldest);
  let tokens = 0;
  let first = messages.length;
  while (first > oldest) {
    tokens += messages[first - 1]!.tokenEstimate;
    if (tokens > historyTokenLimit) break;
    first -= 1;
  }
  return first === 0 ? messages : messages.slice(first);
}
