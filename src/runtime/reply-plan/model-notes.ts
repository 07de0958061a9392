/**
 * Notes for the model about what a reply plan did not send. History tells the truth: the person sees only what was
 * sent, and the model learns next turn what it chose not to send or what never went out — without a record the
 * person could ever be shown.
 *
 * The notes live in the `meta` of display messages, never in their text, so every path that shows a conversation
 * (transcripts, the web page, a duplicate's stored reply) shows nothing new, and the history the model is sent
 * (`historyToInput`) — the only reader that renders them — needs no second query or audience:
 * - `replyNote: "unanswered"` on the last person's message a plan answered without a message (`ignore`, or only a
 *   reaction): the model sees "(you chose not to answer)" after it.
 * - `notSent: <reason>` on an assistant display message that a plan stored but did not send (dropped when the person
 *   wrote again, or refused by the channel): the model sees it marked as not sent; the person never sees it.
 */
export const UNANSWERED_NOTE = 'unanswered';

/** What the model sees after a message it chose not to answer. */
export const UNANSWERED_TEXT = '(you chose not to answer)';

/** Why a planned message was not sent, as stored in `meta.notSent`. */
export type NotSentReason = 'interrupted' | 'refused';

/** How the model sees a planned message that was not sent. */
export function notSentText(text: string, reason: string): string {
  const why = reason === 'interrupted' ? 'the person wrote again first' : 'the channel refused it';
  return `(not sent, ${why}; the person never saw this:) ${text}`;
}

/** Whether a stored message is a planned one the person never got (hidden from everything the person sees). */
export function wasNotSent(meta: Readonly<Record<string, unknown>> | null): boolean {
  return typeof meta?.['notSent'] === 'string';
}

/** A person's message that a reply plan answered without a message. */
export function isUnanswered(message: { readonly role: string; readonly meta: Readonly<Record<string, unknown>> | null }): boolean {
  return message.role === 'user' && message.meta?.['replyNote'] === UNANSWERED_NOTE;
}

/** A message's text as the model sees it: a planned message that never went out is marked so. */
export function modelView(message: { readonly role: string; readonly meta: Readonly<Record<string, unknown>> | null }, content: string): string {
  const reason = message.meta?.['notSent'];
  return message.role === 'assistant' && typeof reason === 'string' ? notSentText(content, reason) : content;
}
