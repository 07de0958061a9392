import { ChannelError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { readAttachmentRefs } from '../../domain/attachments.js';
import type { AttachmentRef, InboundRecord, Session, StoredAttachment, StoredMessage } from '../../domain/model.js';
import type { Channel, ConversationState, ConversationSummary, StoredReply, TranscriptEntry } from '../../domain/ports/channel.js';
import { writtenAt } from '../context/message-time-label.js';
import { resetUserState } from '../context/reset.js';
import { updateUserState } from '../context/user-state-update.js';
import { wasNotSent } from '../reply-plan/model-notes.js';
import type { TurnDependencies } from '../turn/turn-context.js';
import { loadProfile } from '../turn/turn-scope.js';
import { accountNamespaceOf } from './keys.js';

/**
 * What a channel may read of its conversations, and `/reset`: each for the account that owns the conversation only.
 * `loadProfile` reads through the whole turn dependencies, hence they are handed over whole.
 */
export class ConversationReads {
  readonly #deps: TurnDependencies;

  constructor(deps: TurnDependencies) {
    this.#deps = deps;
  }

  /** `/reset`: the model sees the conversation afresh from here; the Responses chain goes, the role as config says. */
  async reset(channel: Channel, accountId: string, conversationId: string): Promise<void> {
    const { store, cache } = this.#deps;
    const session = await this.#ownSession(channel, accountId, conversationId);
    await store.sessions.resetContext(session.id);
    cache.forgetHistory(session.id);
    await updateUserState(store.userState, session.userId, (state) => resetUserState(state, this.#deps.agent.resetKeepsRole));
    cache.forgetState(session.userId);
  }

  /** The interface language of the person behind an account: their profile's, else the channel's hint, else the default. */
  async interfaceLanguage(channel: Channel, accountId: string, hint: string | undefined): Promise<string> {
    const user = await this.#deps.store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user) return hint ?? this.#deps.agent.defaultLanguage;
    // Read as a turn reads it (cache, store, or seeded from the hint once): a later turn sees the same language.
    return (await loadProfile(this.#deps, user.id, hint ?? null, newId())).preferences.interfaceLanguage;
  }

  /** The conversations of an account on this channel, newest first; none for an account nobody knows. */
  async conversations(channel: Channel, accountId: string, limit: number): Promise<readonly ConversationSummary[]> {
    const user = await this.#deps.store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user) return [];
    const sessions = await this.#deps.store.sessions.listByUser(user.id, limit);
    return sessions
      .filter((session) => session.channel === channel.name)
      .map((session) => ({ conversationId: session.conversationId, title: session.title, status: session.status, updatedAt: session.updatedAt }));
  }

  /** What the person sees of a conversation: the messages sent, then those accepted and not answered yet. */
  async transcript(channel: Channel, accountId: string, conversationId: string, limit: number): Promise<readonly TranscriptEntry[]> {
    const { store } = this.#deps;
    const session = await this.#ownSession(channel, accountId, conversationId);
    const [stored, queued] = await Promise.all([store.messages.listRecent(session.id, { limit, audience: 'display' }), store.inbound.listQueued(session.id)]);
    const asking = await this.#openQuestion(stored);
    return [
      ...stored.flatMap((message): TranscriptEntry[] =>
        (message.role === 'user' || message.role === 'assistant') && !wasNotSent(message.meta)
          ? [
              {
                id: message.id,
                role: message.role,
                text: message.content,
                at: writtenAt(message),
                ...withAttachments(readAttachmentRefs(message.meta?.['attachments'])),
                ...operatorOf(message.meta),
                ...(asking?.messageId === message.id ? { approval: asking.approval } : {}),
              },
            ]
          : [],
      ),
      // Accepted, not answered yet: the person sees their message.
      ...queued.map(
        (record): TranscriptEntry => ({ id: record.id, role: 'user', text: record.text, at: record.receivedAt, ...withAttachments(record.attachments) }),
      ),
    ];
  }

  /**
   * The newest question of the transcript that asks the person to approve a tool call (`meta.approval`), when its
   * request still waits for them: a page shows its buttons again after a reload. One read of the request, and only
   * when the transcript holds such a question; one asked again names the same request, and only the newest shows it.
   */
  async #openQuestion(
    messages: readonly StoredMessage[],
  ): Promise<{ readonly messageId: string; readonly approval: NonNullable<TranscriptEntry['approval']> } | undefined> {
    const question = messages.findLast((message) => message.role === 'assistant' && personApprovalOf(message.meta) !== undefined);
    if (question === undefined) return undefined;
    const request = await this.#deps.store.approvals.get(personApprovalOf(question.meta)!);
    if (request === undefined || request.status !== 'pending' || request.by !== 'person') return undefined;
    if (request.expiresAt.getTime() <= this.#deps.now().getTime()) return undefined;
    return { messageId: question.id, approval: { id: request.id, expiresAt: request.expiresAt.toISOString() } };
  }

  /** See `ChannelContext.conversationState`: only of a conversation the account owns. */
  async conversationState(channel: Channel, accountId: string, conversationId: string): Promise<ConversationState> {
    const session = await this.#ownSession(channel, accountId, conversationId);
    return { paused: session.pausedAt !== null };
  }

  /** See `ChannelContext.attachment`: only a file of a conversation the account owns. */
  async attachment(channel: Channel, accountId: string, conversationId: string, attachmentId: string): Promise<StoredAttachment | undefined> {
    const session = await this.#ownSession(channel, accountId, conversationId);
    const [found] = await this.#deps.store.attachments.find([attachmentId], session.id);
    return found;
  }

  /** The reply stored for an answered message (what a duplicate of it is told), if there is one to give. */
  /** See `ChannelContext.storedReply`. */
  async storedReplyTo(channel: Channel, accountId: string, conversationId: string, dedupeKey: string): Promise<StoredReply | undefined> {
    await this.#ownSession(channel, accountId, conversationId);
    const record = await this.#deps.store.inbound.findByDedupeKey(channel.name, conversationId, dedupeKey);
    return record === undefined ? undefined : this.storedReply(record);
  }

  async storedReply(record: InboundRecord): Promise<StoredReply | undefined> {
    if (record.state !== 'answered' || record.replySeq === null) return undefined;
    const reply = await this.#deps.store.messages.findBySeq(record.sessionId, record.replySeq);
    if (!reply) return undefined;
    const errorId = reply.meta?.['errorId'];
    return {
      sessionId: record.sessionId,
      correlationId: record.correlationId,
      replyMessageId: reply.id,
      // A reply plan that sent nothing is answered by its audit record, and a planned message may never have gone
      // out: the person is given neither.
      text: reply.audience === 'display' && !wasNotSent(reply.meta) ? reply.content : '',
      status: reply.meta?.['error'] === true ? 'failed' : 'completed',
      ...(typeof errorId === 'string' ? { errorId } : {}),
    };
  }

  /** The session of a conversation, if it belongs to the account. */
  async #ownSession(channel: Channel, accountId: string, conversationId: string): Promise<Session> {
    const { store } = this.#deps;
    const session = await store.sessions.findByConversation(channel.name, conversationId);
    if (!session) throw new ChannelError('not_found', channel.name, 'There is no such conversation.');
    const user = await store.users.findByAccount(accountNamespaceOf(channel), accountId);
    if (!user || user.id !== session.userId) throw new ChannelError('forbidden', channel.name, 'This conversation belongs to someone else.');
    return session;
  }
}

function withAttachments(refs: readonly AttachmentRef[] | undefined): { attachments?: readonly AttachmentRef[] } {
  return refs === undefined || refs.length === 0 ? {} : { attachments: refs };
}

/** Who wrote an operator's message (`meta.operator`, set by the admin API's send as the agent). */
function operatorOf(meta: Readonly<Record<string, unknown>> | null | undefined): { operator?: string } {
  const operator = meta?.['operator'];
  return typeof operator === 'string' && operator !== '' ? { operator } : {};
}

/** The id of the request a question for the person names (`meta.approval`, set when the turn asked). */
function personApprovalOf(meta: Readonly<Record<string, unknown>> | null | undefined): string | undefined {
  const approval = meta?.['approval'];
  if (typeof approval !== 'object' || approval === null) return undefined;
  const { id, by } = approval as Record<string, unknown>;
  return typeof id === 'string' && id !== '' && by === 'person' ? id : undefined;
}
