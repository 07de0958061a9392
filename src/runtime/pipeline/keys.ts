import type { Channel } from '../../domain/ports/channel.js';
import type { ParticipantKey } from '../conversation-cache.js';
import type { QuietWindow } from '../inbox.js';

/** The namespace identity binds a channel's accounts under: channels that see the same people share one. */
export function accountNamespaceOf(channel: Channel): string {
  return channel.accountNamespace ?? channel.name;
}

/** Where the conversation cache keeps who writes in a conversation of a channel. */
export function participantKey(channel: Channel, message: { readonly accountId: string; readonly conversationId: string }): ParticipantKey {
  return { namespace: accountNamespaceOf(channel), accountId: message.accountId, channel: channel.name, conversationId: message.conversationId };
}

/** The inbox's key of a conversation: one turn at a time runs per key. */
export function conversationKey(channel: string, conversationId: string): string {
  return `${channel}\u0000${conversationId}`;
}

/** When a channel's conversation may start its next turn (`Channel.inbox`). */
export function quietWindowOf(channel: Channel): QuietWindow {
  const quietWindowMs = channel.inbox?.quietWindowMs ?? 0;
  return { quietWindowMs, maxWaitMs: channel.inbox?.maxWaitMs ?? quietWindowMs * 4 };
}
