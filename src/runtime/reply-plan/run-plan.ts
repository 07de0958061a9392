import { ChannelRetryLaterError } from '../../domain/errors.js';
import type { Channel, SentPart } from '../../domain/ports/channel.js';
import type { DeliveryRecord } from '../../domain/ports/store.js';
import type { ReplyStep } from '../../domain/reply-actions.js';
import type { PlanToRun } from '../turn/answer.js';
import { postponeParts } from '../postponement.js';
import type { TurnScope } from '../turn/turn-context.js';
import { hasEffect } from './persist-plan.js';
import type { NotSentReason } from './model-notes.js';

const DEFAULT_TYPING_INTERVAL_MS = 4_000;

/** How a plan is paced (config `agent.actions`). */
export interface ReplyPacing {
  /** Typing before a message lasts its length at this speed; 0: no typing before messages. */
  readonly typingCharsPerSecond: number;
  /** Longest typing before one message, in seconds. */
  readonly maxTypingSeconds: number;
  /** Longest total of the plan's waits and typing, in seconds: the typing before messages counts toward it too. */
  readonly maxTotalWaitSeconds: number;
}

/** What carrying out a plan did. */
export interface PlanRunResult {
  /** The messages the channel took, in order. */
  readonly sent: readonly SentPart[];
  /** Their texts, in order (the outcome's reply). */
  readonly sentTexts: readonly string[];
  /** Why the plan stopped early, if it did. */
  readonly stopped?: 'interrupted' | 'refused' | 'postponed';
}

/** Channels already logged as unable to show a plan's reaction: a missing capability is logged once, not every turn. */
const reactionsSkippedOn = new WeakSet<Channel>();

/**
 * Carries out a stored reply plan in order: typing before each message for as long as a person would take to write
 * it (capped per message, and in all by what the plan's own waits leave of `maxTotalWaitSeconds`), explicit typing
 * and waits, reactions where the channel can show them, and each message sent under its
 * outbox record's key and marked sent at once — so a crash from here on never sends it again, and recovery carries
 * out the rest (without the pacing: waits and typing are not replayed). Never throws.
 *
 * `interrupt` (the person wrote again, `interruptOnNewMessage`) drops the rest of the plan: its sends and reactions
 * are recorded as not sent (outbox records failed with reason `interrupted`, display messages `meta.notSent`), so the
 * model learns next turn what the person never saw. A reaction the channel cannot show is skipped and logged once per
 * channel; a message the channel refuses for good ends the plan the same way with reason `refused`.
 */
export async function runPlan(scope: TurnScope, plan: PlanToRun, pacing: ReplyPacing, interrupt: AbortSignal | undefined): Promise<PlanRunResult> {
  const { channel, target } = scope;
  const records = plan.deliveries;
  const sent: SentPart[] = [];
  const sentTexts: string[] = [];
  let effect = 0; // index of the next step with an effect (its outbox record)
  let send = 0; // index of the next send step (its display message)
  // The plan's own waits and typing were checked against the total; typing before messages gets what they leave.
  let typingLeftMs = Math.max(
    0,
    pacing.maxTotalWaitSeconds * 1_000 - plan.steps.reduce((sum, step) => sum + (step.kind === 'wait' || step.kind === 'typing' ? step.ms : 0), 0),
  );

  const dropRest = async (from: number, reason: NotSentReason, error?: unknown) => {
    const unsentRecords = records?.slice(effect) ?? [];
    const unsentDisplays = plan.displayIds.slice(send);
    const why = error === undefined ? reason : `${reason}: ${error instanceof Error ? error.message : String(error)}`;
    for (const record of unsentRecords)
      await scope.deps.store.deliveries
        .markFailed(record.id, why)
        .catch((markError: unknown) => scope.log.error({ err: markError }, 'could not mark an unsent plan step'));
    await scope.deps.store.messages
      .markNotSent(scope.session.id, unsentDisplays, reason)
      .catch((markError: unknown) => scope.log.error({ err: markError }, 'could not mark planned messages as not sent'));
    // The cached history holds them as stored before: the next turn reads the truth from the store.
    scope.deps.cache.forgetHistory(scope.session.id);
    scope.log.info(
      { reason, droppedSteps: plan.steps.length - from, droppedMessages: unsentDisplays.length },
      'reply plan stopped; the rest is recorded as not sent',
    );
  };

  for (const [index, step] of plan.steps.entries()) {
    if (interrupt?.aborted) {
      await dropRest(index, 'interrupted');
      return { sent, sentTexts, stopped: 'interrupted' };
    }
    if (step.kind === 'wait') await pause(step.ms, interrupt);
    else if (step.kind === 'typing') await typingFor(scope, step.ms, interrupt);
    else if (step.kind === 'send') {
      const typingMs = Math.min(typingMsFor(step.text, pacing), typingLeftMs);
      typingLeftMs -= typingMs;
      await typingFor(scope, typingMs, interrupt);
      if (interrupt?.aborted) {
        await dropRest(index, 'interrupted');
        return { sent, sentTexts, stopped: 'interrupted' };
      }
      const record = records?.[effect];
      try {
        const receipt = await channel.send(target, step.text, {
          deliveryKey: record?.id ?? `${scope.replyMessageId}:${effect}`,
          ...(step.replyTo === null ? {} : { replyTo: step.replyTo }),
        });
        sent.push(receipt);
        sentTexts.push(step.text);
        effect += 1;
        send += 1;
        // Marked at once: a crash from here on does not send this message again.
        if (record) await markSent(scope, record, receipt.messageId);
      } catch (error) {
        if (error instanceof ChannelRetryLaterError && records !== undefined) {
          // The messenger asked to wait: this step and the later ones stay in the outbox and recovery carries them
          // out when allowed (in order, without the waits).
          await postponeParts(
            scope.deps,
            scope.log,
            records.slice(effect),
            error.retryAfterMs,
            'the channel asked to wait; the rest of the reply plan follows without its pacing',
          );
          return { sent, sentTexts, stopped: 'postponed' };
        }
        scope.log.error({ err: error, channel: channel.name, sentMessages: sent.length }, 'could not send a message of the reply plan');
        await dropRest(index, 'refused', error);
        return { sent, sentTexts, stopped: 'refused' };
      }
    } else if (step.kind === 'react') {
      await react(scope, step, records?.[effect]);
      effect += 1;
    }
  }
  return { sent, sentTexts };
}

/** How long a person would type `text`, in ms, at the configured speed and cap. */
export function typingMsFor(text: string, pacing: ReplyPacing): number {
  if (!(pacing.typingCharsPerSecond > 0)) return 0;
  return Math.round(Math.min(text.length / pacing.typingCharsPerSecond, pacing.maxTypingSeconds) * 1000);
}

/**
 * Shows typing for `ms`, renewed every `typingIntervalMs` while it lasts; a channel without typing just waits. Ends
 * early when interrupted.
 */
async function typingFor(scope: TurnScope, ms: number, interrupt: AbortSignal | undefined): Promise<void> {
  if (ms <= 0) return;
  const { channel, target } = scope;
  if (!channel.capabilities.typing || !channel.typing) return pause(ms, interrupt);
  const show = () => {
    channel.typing!(target).catch((error: unknown) => scope.log.warn({ err: error, channel: channel.name }, 'could not show typing'));
  };
  show();
  const renew = setInterval(show, channel.capabilities.typingIntervalMs ?? DEFAULT_TYPING_INTERVAL_MS);
  try {
    await pause(ms, interrupt);
  } finally {
    clearInterval(renew);
  }
}

/**
 * Adds a reaction where the channel can show it and allows its emoji; otherwise skips it (logged once per channel).
 * A reaction is never worth failing the turn: a refusal is logged and recorded, and the plan goes on.
 */
async function react(scope: TurnScope, step: Extract<ReplyStep, { kind: 'react' }>, record: DeliveryRecord | undefined): Promise<void> {
  const { channel, target } = scope;
  const { reactions, reactionEmoji } = channel.capabilities;
  const unsupported =
    !reactions || !channel.react
      ? 'the channel shows no reactions'
      : reactionEmoji !== undefined && !reactionEmoji.includes(step.emoji)
        ? 'the channel does not allow this emoji'
        : undefined;
  if (unsupported !== undefined) {
    if (!reactionsSkippedOn.has(channel)) {
      reactionsSkippedOn.add(channel);
      scope.log.warn({ channel: channel.name, emoji: step.emoji }, `reply plan reaction skipped: ${unsupported} (logged once per channel)`);
    }
    if (record) await scope.deps.store.deliveries.markFailed(record.id, `skipped: ${unsupported}`).catch(() => undefined);
    return;
  }
  try {
    await channel.react!(target, step.messageId, step.emoji);
    if (record) await markSent(scope, record, step.messageId);
  } catch (error) {
    scope.log.warn({ err: error, channel: channel.name, emoji: step.emoji }, "could not add the reply plan's reaction; going on");
    if (record) await scope.deps.store.deliveries.markFailed(record.id, error instanceof Error ? error.message : String(error)).catch(() => undefined);
  }
}

/** Resolves after `ms`, or at once when `signal` fires. Plain timers, so tests drive it with a fake clock. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

async function markSent(scope: TurnScope, record: DeliveryRecord, channelMessageId: string): Promise<void> {
  try {
    await scope.deps.store.deliveries.markSent(record.id, channelMessageId);
  } catch (error) {
    // The step reached the person; only its record is behind. After a restart it could be carried out once more.
    scope.log.error({ err: error, part: record.part }, 'could not mark a sent reply plan step');
  }
}
