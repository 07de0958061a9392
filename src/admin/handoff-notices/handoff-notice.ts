import type { OperatorQueries } from '../../domain/ports/operator-queries.js';
import type { Handoff, HandoffSource } from '../../domain/ports/store.js';

/** How many of the conversation's last messages a notice carries. */
export const NOTICE_MESSAGES = 5;
/** Each message in a notice is cut to this many characters: enough to see what it is about, never a whole letter. */
export const NOTICE_MESSAGE_CHARS = 500;
/** The reason is cut to this many characters (a model may write at length). */
export const NOTICE_REASON_CHARS = 1000;

/** One round of telling operators that a conversation waits for a person: what every way of telling sends. */
export interface HandoffNotice {
  readonly handoffId: string;
  /** 1 for the first notice, 2 for the first repeat, … */
  readonly round: number;
  /** The most rounds this handoff gets (1 + `operators.notify.repeats`). */
  readonly rounds: number;
  readonly sessionId: string;
  readonly userId: string;
  /** The conversation's channel (`telegram-bot`, `web`, …); null when the conversation cannot be read. */
  readonly channel: string | null;
  readonly reason: string;
  readonly source: HandoffSource;
  readonly requestedAt: Date;
  readonly person: { readonly name: string | null };
  /** The last displayed messages, oldest first, each cut to {@link NOTICE_MESSAGE_CHARS}. */
  readonly lastMessages: readonly { readonly role: 'user' | 'assistant'; readonly text: string; readonly at: Date }[];
  /** The conversation on the dashboard (`operators.dashboardUrl`); null without one. */
  readonly url: string | null;
}

/** What a notice reads of the conversation: the operators' read model (`Store.operators`). */
export type NoticeConversations = Pick<OperatorQueries, 'conversation' | 'transcript'>;

/** The notice of `round` for a handoff, with the conversation's channel, person and last messages read afresh. */
export async function composeHandoffNotice(
  handoff: Handoff,
  round: { readonly round: number; readonly rounds: number },
  conversations: NoticeConversations,
  dashboardUrl: string | undefined,
): Promise<HandoffNotice> {
  const [conversation, transcript] = await Promise.all([
    conversations.conversation(handoff.sessionId),
    conversations.transcript(handoff.sessionId, { audit: false, limit: NOTICE_MESSAGES }),
  ]);
  return {
    handoffId: handoff.id,
    round: round.round,
    rounds: round.rounds,
    sessionId: handoff.sessionId,
    userId: handoff.userId,
    channel: conversation?.channel ?? null,
    reason: cut(handoff.reason, NOTICE_REASON_CHARS),
    source: handoff.source,
    requestedAt: handoff.requestedAt,
    person: { name: conversation?.user.displayName ?? null },
    lastMessages: transcript.flatMap((message) =>
      message.role === 'user' || message.role === 'assistant'
        ? [{ role: message.role, text: cut(message.content, NOTICE_MESSAGE_CHARS), at: message.createdAt }]
        : [],
    ),
    url: dashboardUrl === undefined ? null : conversationLink(dashboardUrl, handoff.sessionId),
  };
}

/**
 * The dashboard's address of one conversation: the page is served at `/admin` and picks its view from the hash
 * (`#/conversations/<sessionId>`, see web/admin/admin.js). `dashboardUrl` may name the server or the page itself.
 */
export function conversationLink(dashboardUrl: string, sessionId: string): string {
  const base = dashboardUrl.replace(/\/+$/, '');
  const page = base.endsWith('/admin') ? base : `${base}/admin`;
  return `${page}#/conversations/${encodeURIComponent(sessionId)}`;
}

/** `text` cut to `max` UTF-16 units with an ellipsis, never between the halves of a surrogate pair. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}
