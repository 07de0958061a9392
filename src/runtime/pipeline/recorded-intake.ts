import { ChannelError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { Channel, InboundMessage, RecordedConversation, RecordedMessage } from '../../domain/ports/channel.js';
import { unstorableReason } from '../../domain/storable-text.js';
import type { TurnDependencies } from '../turn/turn-context.js';
import type { IdentityJoin } from './identity-join.js';
import { accountNamespaceOf, participantKey } from './keys.js';
import { checkStorable } from './storable-inbound.js';

/** Why a message may be stored without a turn (`RecordedMessage.source`). */
const RECORDED_SOURCES: ReadonlySet<string> = new Set<RecordedMessage['source']>(['imported', 'owner', 'held']);

/** What storing messages without a turn needs. */
export interface RecordedIntakeOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'cache' | 'logger' | 'metrics'>;
  /** Longest recorded text in characters (as for an inbound message). */
  readonly maxInboundChars: number;
  readonly identity: Pick<IdentityJoin, 'join'>;
}

/** Messages stored in a conversation's history without a turn (`ChannelContext.record`). */
export class RecordedIntake {
  readonly #deps: RecordedIntakeOptions['deps'];
  readonly #options: RecordedIntakeOptions;

  constructor(options: RecordedIntakeOptions) {
    this.#deps = options.deps;
    this.#options = options;
  }

  /** See `Pipeline.record`. */
  async record(channel: Channel, conversation: RecordedConversation, entries: readonly RecordedMessage[]): Promise<{ readonly stored: number }> {
    const checked = entries.map((entry, index) => this.#checkRecorded(channel, entry, index));
    const kind = conversation.conversationKind ?? 'direct';
    const first = checked[0];
    if (first === undefined) return { stored: 0 };
    // The conversation as a message of its person would arrive: the same identity rules apply to it.
    const message: InboundMessage = {
      channel: channel.name,
      accountId: conversation.accountId,
      displayName: conversation.displayName ?? null,
      conversationId: conversation.conversationId,
      text: first.text,
      conversationKind: kind,
    };
    checkStorable(message, first.text);
    const participant =
      this.#deps.cache.participant(participantKey(channel, message)) ??
      (await this.#options.identity.join(channel, message, first.text, kind, newId())).participant;
    const { user, session } = participant;
    // In a group each user message keeps its sender, so later turns label it for the model as they label the others.
    const sender = kind === 'shared' ? { userId: user.id, name: conversation.displayName ?? user.displayName } : undefined;
    const stored = await this.#deps.store.recorded.append(
      {
        channel: channel.name,
        conversationId: conversation.conversationId,
        sessionId: session.id,
        accountNamespace: accountNamespaceOf(channel),
        accountId: conversation.accountId,
        userId: user.id,
      },
      checked.map((entry) => ({
        role: entry.role,
        audience: 'display',
        content: entry.text,
        channelMessageId: entry.messageId,
        meta: {
          recorded: entry.source,
          messageId: entry.messageId,
          at: entry.at.toISOString(),
          ...(sender !== undefined && entry.role === 'user' ? { sender } : {}),
        },
      })),
    );
    if (stored.length > 0) {
      // The next turn reads the history afresh from the store, these messages included.
      this.#deps.cache.forgetHistory(session.id);
      for (const entry of stored) this.#deps.metrics.recordedMessages.inc({ channel: channel.name, source: String(entry.meta?.['recorded'] ?? 'imported') });
    }
    this.#deps.logger.info(
      {
        channel: channel.name,
        conversationId: conversation.conversationId,
        sessionId: session.id,
        stored: stored.length,
        known: checked.length - stored.length,
      },
      'messages recorded without a turn',
    );
    return { stored: stored.length };
  }

  /** A recorded entry under the inbound rules: trimmed text, not empty, not too long, storable; a valid time. */
  #checkRecorded(channel: Channel, entry: RecordedMessage, index: number): RecordedMessage {
    const where = `Recorded entry ${index} (message ${entry.messageId})`;
    const text = entry.text.trim();
    if (!text) throw new ChannelError('inbound_invalid', channel.name, `${where} has no text.`);
    if (text.length > this.#options.maxInboundChars) {
      throw new ChannelError('inbound_invalid', channel.name, `${where} is too long: ${text.length} characters, at most ${this.#options.maxInboundChars}.`);
    }
    if (unstorableReason(text) !== undefined || unstorableReason(entry.messageId) !== undefined) {
      throw new ChannelError('inbound_invalid', channel.name, `${where} holds a NUL character or a broken unicode surrogate; send plain text.`);
    }
    if (!entry.messageId) throw new ChannelError('inbound_invalid', channel.name, `Recorded entry ${index} has no message id.`);
    if (entry.role !== 'user' && entry.role !== 'assistant')
      throw new ChannelError('inbound_invalid', channel.name, `${where} has role ${String(entry.role)}; user or assistant.`);
    if (!RECORDED_SOURCES.has(entry.source))
      throw new ChannelError('inbound_invalid', channel.name, `${where} has source ${String(entry.source)}; imported, owner or held.`);
    if (!(entry.at instanceof Date) || Number.isNaN(entry.at.getTime())) throw new ChannelError('inbound_invalid', channel.name, `${where} has no valid time.`);
    return { ...entry, text };
  }
}
