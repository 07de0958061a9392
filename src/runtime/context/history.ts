import type { StoredMessage } from '../../domain/model.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import { isUnanswered, modelView, UNANSWERED_TEXT } from '../reply-plan/model-notes.js';
import { labelled, senderOf, type MessageSender } from './sender-label.js';

/**
 * The conversation the model sees: display messages only (audit records, tool traffic and hidden context stay
 * out), as plain user/assistant turns. In a group (`group`), each user message carries its sender's label, so that
 * no member's words read as another's; a direct chat's messages go as they are. What a reply plan did not send is
 * shown as such (see ../reply-plan/model-notes.ts).
 */
export function historyToInput(messages: readonly StoredMessage[], group = false): ModelInputItem[] {
  const items: ModelInputItem[] = [];
  for (const message of messages) {
    if (message.audience !== 'display') continue;
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    const content = group && message.role === 'user' ? labelled(message.content, senderOf(message.meta)) : message.content;
    items.push({ type: 'message', role: message.role, content: modelView(message, content) });
    // A reply plan that sent nothing: the model learns it chose silence (never shown to the person).
    if (isUnanswered(message)) items.push({ type: 'message', role: 'assistant', content: UNANSWERED_TEXT });
  }
  return items;
}

/** The messages a turn answers, as the model sees them: labelled with their sender in a group (`sender` given). */
export function newMessagesToInput(texts: readonly string[], sender?: MessageSender): ModelInputItem[] {
  return texts.map((text) => ({ type: 'message', role: 'user', content: sender === undefined ? text : labelled(text, sender) }));
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
