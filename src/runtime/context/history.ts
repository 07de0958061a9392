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
