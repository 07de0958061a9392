import { describeAttachments, readAttachmentRefs } from '../../domain/attachments.js';
import type { AttachmentRef, StoredMessage } from '../../domain/model.js';
import type { ModelImage, ModelInputItem } from '../../domain/ports/model-provider.js';
import { isUnanswered, modelView, UNANSWERED_TEXT } from '../reply-plan/model-notes.js';
import { storedMessageId, withMessageId } from './message-id-label.js';
import { withTime, writtenAt } from './message-time-label.js';
import { labelled, senderOf, type MessageSender } from './sender-label.js';

/**
 * The conversation the model sees: display messages only (audit records, tool traffic and hidden context stay
 * out), as plain user/assistant turns, with the notes operators left the agent where they were left (as system
 * messages: see {@link operatorNoteOf}). In a group (`group`), each user message carries its sender's label, so that
 * no member's words read as another's; a direct chat's messages go as they are. With `messageIds` (replies as
 * actions), each user message that kept its channel message id shows it in front (`[message_id: 77] …`). What a
 * reply plan did not send is shown as such (see ../reply-plan/model-notes.ts). With `timeZone` (`agent.historyTimes`), each
 * user message shows when it was written, in that zone (`[Fri 2025-03-14 09:05] …`); the agent's own messages carry
 * no label, since a model that sees one in its own turns starts writing it into its replies.
 */
export function historyToInput(messages: readonly StoredMessage[], group = false, messageIds = false, timeZone?: string): ModelInputItem[] {
  const items: ModelInputItem[] = [];
  for (const message of messages) {
    if (message.audience !== 'display') continue;
    const note = operatorNoteOf(message);
    if (note !== undefined) {
      items.push(note);
      continue;
    }
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    if (message.role === 'assistant') {
      items.push({ type: 'message', role: 'assistant', content: modelView(message, message.content) });
      continue;
    }
    const refs = readAttachmentRefs(message.meta?.['attachments']);
    const text = withAttachmentNames(message.content, refs);
    const content = group ? labelled(text, senderOf(message.meta)) : text;
    const identified = messageIds ? withMessageId(content, storedMessageId(message.meta)) : content;
    items.push({
      type: 'message',
      role: 'user',
      content: timeZone === undefined ? identified : withTime(identified, writtenAt(message), timeZone),
      ...imagesOf(refs),
    });
    // A reply plan that sent nothing: the model learns it chose silence (never shown to the person).
    if (isUnanswered(message)) items.push({ type: 'message', role: 'assistant', content: UNANSWERED_TEXT });
  }
  return items;
}

/**
 * A note an operator left the agent when handing the conversation back (`POST …/resume` with a note), as the model
 * reads it: a system message naming the operator. Undefined for any other message.
 */
function operatorNoteOf(message: StoredMessage): ModelInputItem | undefined {
  if (message.role !== 'system' || message.meta?.['operatorNote'] !== true) return undefined;
  const operator = message.meta['operator'];
  const from = typeof operator === 'string' && operator !== '' ? `operator ${operator}` : 'an operator';
  return { type: 'message', role: 'system', content: `Note from ${from} (for you only, not shown to the person): ${message.content}` };
}

/** The ids {@link historyToInput} shows with `messageIds`: those of its user messages that kept one. */
export function historyMessageIds(messages: readonly StoredMessage[]): string[] {
  const ids: string[] = [];
  for (const message of messages) {
    if (message.audience !== 'display' || message.role !== 'user') continue;
    const id = storedMessageId(message.meta);
    if (id !== undefined) ids.push(id);
  }
  return ids;
}

/**
 * A message a turn answers: its text, the channel's id of it when the model is shown ids, and when it arrived when
 * the model is shown times (else undefined).
 */
export interface NewMessageText {
  readonly text: string;
  readonly messageId?: string | undefined;
  readonly at?: Date | undefined;
  /** Files the person attached to it. */
  readonly attachments?: readonly AttachmentRef[] | undefined;
}

/**
 * The messages a turn answers, as the model sees them: labelled with their sender in a group (`sender` given), with
 * their message id in front where one is given, and with their time (in `timeZone`) where one is given: as the same
 * messages read in the next turn's history, so a provider's prompt cache still matches them.
 */
export function newMessagesToInput(messages: readonly (string | NewMessageText)[], sender?: MessageSender, timeZone?: string): ModelInputItem[] {
  return messages.map((message) => {
    const { text, messageId, at, attachments = [] } = typeof message === 'string' ? { text: message, messageId: undefined, at: undefined } : message;
    const named = withAttachmentNames(text, attachments);
    const content = sender === undefined ? named : labelled(named, sender);
    return { type: 'message', role: 'user', content: withTime(withMessageId(content, messageId), at, timeZone), ...imagesOf(attachments) };
  });
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

/** The text of a message with its attachments named after it (`Look at this [image: cat.png]`). */
function withAttachmentNames(text: string, refs: readonly AttachmentRef[]): string {
  if (refs.length === 0) return text;
  const names = describeAttachments(refs);
  return text === '' ? names : `${text}\n${names}`;
}

/** The images of a message, to be filled with their bytes before the model call (see ./attached-images.ts). */
function imagesOf(refs: readonly AttachmentRef[]): { images?: ModelImage[] } {
  const images = refs.filter((ref) => ref.kind === 'image').map((ref) => ({ attachmentId: ref.id, mimeType: ref.mimeType }));
  return images.length === 0 ? {} : { images };
}
