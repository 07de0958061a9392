/**
 * The channel's id of a person's message, as the model sees it in actions mode: `[message_id: 77] Hello`. A reply
 * plan may react to (or quote) only ids it was shown, so the label is the one place they come from.
 */

/** Ids a label may show: a channel's own ids (Telegram's numbers, AG-UI run ids). Others, unknown in form, are not shown. */
const SHOWABLE_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

/** `id` when it is safe to show to the model (it cannot close the label or open a section), else undefined. */
export function showableMessageId(id: unknown): string | undefined {
  return typeof id === 'string' && SHOWABLE_ID.test(id) ? id : undefined;
}

/** The channel message id a stored message keeps in `meta.messageId` (turn-stored and recorded person messages). */
export function storedMessageId(meta: Readonly<Record<string, unknown>> | null): string | undefined {
  return showableMessageId(meta?.['messageId']);
}

/** `text` with its message id in front, or as it is when it has none to show. */
export function withMessageId(text: string, id: string | undefined): string {
  return id === undefined ? text : `[message_id: ${id}] ${text}`;
}
