import { ChannelRetryLaterError } from '../../domain/errors.js';
import type { Channel } from '../../domain/ports/channel.js';
import type { DeliveryRecord } from '../../domain/ports/store.js';
import { postponeParts } from '../postponement.js';
import type { TurnDependencies } from '../turn/turn-context.js';

/** What resending outbox parts needs. */
export interface OutboxResendOptions {
  readonly deps: Pick<TurnDependencies, 'store' | 'metrics' | 'logger'>;
  /** The channels running in this process, by name: a part of another channel is left alone. */
  readonly channels: ReadonlyMap<string, Channel>;
}

/**
 * Sends the reply parts a recovery round took from the outbox: ones a process that died stored but never sent, and
 * postponed ones whose wait is over.
 */
export class OutboxResend {
  readonly #deps: OutboxResendOptions['deps'];
  readonly #channels: ReadonlyMap<string, Channel>;

  constructor(options: OutboxResendOptions) {
    this.#deps = options.deps;
    this.#channels = options.channels;
  }

  /**
   * Sends the outbox parts one recovery round took, in their order. When the channel asks to wait for one, it and
   * the later parts of its conversation in this round are postponed together; other conversations go on.
   */
  async resendAll(parts: readonly DeliveryRecord[]): Promise<void> {
    const conversationOf = (part: DeliveryRecord) => `${part.channel}\u0000${part.conversationId}`;
    const held = new Set<string>();
    for (const [index, part] of parts.entries()) {
      const conversation = conversationOf(part);
      if (held.has(conversation)) continue;
      const retryAfterMs = await this.#resend(part);
      if (retryAfterMs === undefined) continue;
      held.add(conversation);
      const waiting = parts.slice(index).filter((later) => conversationOf(later) === conversation);
      await postponeParts(this.#deps, this.#deps.logger.child({ correlationId: part.correlationId }), waiting, retryAfterMs, 'the channel asked to wait');
    }
  }

  /**
   * Sends a reply part from the outbox (one a process that died stored but never sent, or one postponed), under the
   * key its first attempt had, and marks it. Resolves with the wait the channel asked for, if it asked.
   */
  async #resend(part: DeliveryRecord): Promise<number | undefined> {
    const channel = this.#channels.get(part.channel);
    if (!channel) return undefined;
    const target = {
      channel: part.channel,
      conversationId: part.conversationId,
      accountId: part.accountId,
      inReplyTo: part.inReplyTo,
      correlationId: part.correlationId,
      sessionId: part.sessionId,
    };
    const log = this.#deps.logger.child({ correlationId: part.correlationId });
    log.warn(
      { channel: part.channel, part: part.part },
      "sending a reply part from the outbox (left unsent by a stopped process, or postponed; a reply plan's waits and typing are not replayed)",
    );
    try {
      if (part.reaction) {
        // A reply plan's reaction: carried out once like a message (a plan's waits and typing are not replayed).
        if (!channel.capabilities.reactions || !channel.react) {
          await this.#deps.store.deliveries.markFailed(part.id, 'skipped: the channel shows no reactions');
          return undefined;
        }
        await channel.react(target, part.reaction.messageId, part.reaction.emoji);
        await this.#deps.store.deliveries.markSent(part.id, part.reaction.messageId);
        return undefined;
      }
      // A question keeps its approval, so a channel with buttons shows them after a restart too.
      const sent = await channel.send(target, part.text, {
        deliveryKey: part.id,
        ...(part.replyTo ? { replyTo: part.replyTo } : {}),
        ...(part.approval ? { approval: part.approval } : {}),
      });
      await this.#deps.store.deliveries.markSent(part.id, sent.messageId);
      return undefined;
    } catch (error) {
      if (error instanceof ChannelRetryLaterError) return error.retryAfterMs;
      log.error({ err: error, channel: part.channel }, 'could not send a recovered reply part');
      await this.#deps.store.deliveries.markFailed(part.id, error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }
}
