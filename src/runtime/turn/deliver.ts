import { ChannelError, ChannelRetryLaterError } from '../../domain/errors.js';
import type { SentPart, TurnOutcome } from '../../domain/ports/channel.js';
import type { DeliveryRecord } from '../../domain/ports/store.js';
import type { Answer, PlanToRun } from './answer.js';
import { postponeParts } from '../postponement.js';
import { runPlan } from '../reply-plan/run-plan.js';
import type { TurnScope } from './turn-context.js';

const DEFAULT_TYPING_INTERVAL_MS = 4_000;

/** The outbound side of one turn. */
export interface Delivery {
  /**
   * Sends the stored reply, part by part (or carries out its plan), once; then settles the turn with the channel.
   * Resolves with the turn's outcome; for a plan its reply is the messages actually sent.
   */
  deliver(answer: Answer): Promise<TurnOutcome>;
  /** Ends a turn that has no stored reply: nothing is sent. */
  fail(error: unknown): void;
  /**
   * Ends a turn another process took over: what it streamed is discarded and the channel is not settled, since the
   * turn that answers the messages runs elsewhere.
   */
  abandon(): void;
}

/**
 * Starts the outbound side of a turn: marks the answered messages read and shows typing from now until the reply is
 * sent (renewed before it expires), where the channel can. A failing indicator costs only a log line.
 */
export function startDelivery(scope: TurnScope): Delivery {
  const { channel, target } = scope;
  const { capabilities } = channel;
  const quietly = (what: string, promise: Promise<unknown> | undefined) => {
    promise?.catch((error: unknown) => scope.log.warn({ err: error, channel: channel.name }, `could not ${what}`));
  };

  // The turn calls the model right after this: its request is built and sent first, and the read mark and typing
  // follow in the next turn of the event loop (a fraction of a millisecond later), since the reply is what the
  // person waits for. A turn that ended before then (it failed at once) starts no typing.
  let typing: NodeJS.Timeout | undefined;
  let ended = false;
  setImmediate(() => {
    if (capabilities.readReceipts) quietly('mark messages read', channel.markRead?.(target));
    if (ended || !capabilities.typing || !channel.typing) return;
    const showTyping = () => quietly('show typing', channel.typing!(target));
    showTyping();
    typing = setInterval(showTyping, capabilities.typingIntervalMs ?? DEFAULT_TYPING_INTERVAL_MS);
    typing.unref();
  });
  const stopTyping = () => {
    ended = true;
    clearInterval(typing);
  };
  const discardStreamedText = (reply: string | undefined) => {
    if (scope.journal.streamedText !== '' && scope.journal.streamedText.trim() !== reply) scope.progress({ type: 'discard', messageId: scope.replyMessageId });
  };

  /** A reply plan: carried out step by step with its pacing; the outcome's reply is what was actually sent. */
  const deliverPlan = async (answer: Answer, plan: PlanToRun) => {
    const records = plan.deliveries;
    let sent: readonly SentPart[] = [];
    let sentTexts: readonly string[] = [];
    // Earlier replies of the conversation wait in the outbox: the whole plan queues behind them (without its pacing).
    const behind = records && records.length > 0 ? await queuedAhead(scope, answer.outcome.replyMessageId) : undefined;
    if (records && behind !== undefined)
      await postponeParts(
        scope.deps,
        scope.log,
        records,
        behind,
        'earlier replies of the conversation wait in the outbox; the reply plan follows without its pacing',
      );
    else ({ sent, sentTexts } = await runPlan(scope, plan, scope.deps.replies.actions, scope.interrupt?.()));
    const outcome = { ...answer.outcome, reply: sentTexts.join('\n\n') };
    channel.settle?.(target, { kind: 'answered', outcome, parts: sent });
    return outcome;
  };

  return {
    async deliver(answer) {
      // The person sees exactly the stored reply: text streamed that is not it goes first.
      discardStreamedText(answer.outcome.reply);
      if (answer.plan) {
        stopTyping();
        return deliverPlan(answer, answer.plan);
      }
      const sent: SentPart[] = [];
      const records = answer.deliveries;
      try {
        // Earlier replies of the conversation are still in the outbox (postponed by a flood wait, or being resent):
        // this one queues behind them rather than overtaking them.
        const behind = records ? await queuedAhead(scope, answer.outcome.replyMessageId) : undefined;
        if (records && behind !== undefined)
          await postponeParts(scope.deps, scope.log, records, behind, 'earlier replies of the conversation wait in the outbox');
        else {
          for (const [index, part] of answer.parts.entries()) {
            const record = records?.[index];
            const approval = index === answer.parts.length - 1 ? answer.approval : undefined;
            const receipt = await channel.send(target, part, {
              deliveryKey: record?.id ?? `${answer.outcome.replyMessageId}:${index}`,
              ...(approval === undefined ? {} : { approval }),
            });
            sent.push(receipt);
            // Marked at once: a crash from here on does not send this part again.
            if (record) await markSent(scope, record, receipt.messageId);
          }
        }
      } catch (error) {
        const unsent = records?.slice(sent.length) ?? [];
        if (error instanceof ChannelRetryLaterError && unsent.length > 0) {
          // The messenger asked to wait: this part and the ones after it stay in the outbox and are sent when allowed.
          await postponeParts(scope.deps, scope.log, unsent, error.retryAfterMs, 'the channel asked to wait');
        } else {
          // The channel refused the part for good (its own retries are behind it), or cannot send later (no outbox):
          // it and the parts after it are not tried again, by this process or another.
          await markUnsent(scope, unsent, error);
          // A person who left mid-turn (a closed web run) is ordinary: the reply is stored and shown on their return.
          const gone = error instanceof ChannelError && error.code === 'client_gone';
          scope.log[gone ? 'info' : 'error'](
            { err: error, channel: channel.name, sentParts: sent.length, parts: answer.parts.length },
            gone ? 'reply stored; its reader has left' : 'could not send the reply',
          );
        }
      } finally {
        stopTyping();
      }
      channel.settle?.(target, { kind: 'answered', outcome: answer.outcome, parts: sent });
      return answer.outcome;
    },
    fail(error) {
      stopTyping();
      discardStreamedText(undefined);
      channel.settle?.(target, { kind: 'error', correlationId: scope.correlationId, error });
    },
    abandon() {
      stopTyping();
      discardStreamedText(undefined);
    },
  };
}

/** How long the conversation's earlier outbox parts still wait, or undefined when there are none (or the store cannot say). */
async function queuedAhead(scope: TurnScope, replyMessageId: string): Promise<number | undefined> {
  try {
    return await scope.deps.store.deliveries.queuedAhead({ channel: scope.target.channel, conversationId: scope.target.conversationId, replyMessageId });
  } catch (error) {
    scope.log.warn({ err: error }, 'could not look for earlier reply parts in the outbox; sending the reply now');
    return undefined;
  }
}

async function markUnsent(scope: TurnScope, parts: readonly DeliveryRecord[], error: unknown): Promise<void> {
  const reason = error instanceof Error ? error.message : String(error);
  for (const part of parts)
    await scope.deps.store.deliveries
      .markFailed(part.id, reason)
      .catch((markError: unknown) => scope.log.error({ err: markError }, 'could not mark an unsent reply part'));
}

async function markSent(scope: TurnScope, delivery: DeliveryRecord, channelMessageId: string): Promise<void> {
  try {
    await scope.deps.store.deliveries.markSent(delivery.id, channelMessageId);
  } catch (error) {
    // The part reached the person; only its record is behind. After a restart it could be sent once more.
    scope.log.error({ err: error, part: delivery.part }, 'could not mark a sent reply part');
  }
}
