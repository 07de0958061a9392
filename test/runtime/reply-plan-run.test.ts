import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { ChannelCapabilities, ReplyTarget, SendOptions, SentPart } from '../../src/domain/ports/channel.js';
import type { DeliveryRecord } from '../../src/domain/ports/store.js';
import type { ReplyStep } from '../../src/domain/reply-actions.js';
import type { PlanToRun } from '../../src/runtime/turn/answer.js';
import { runPlan, typingMsFor, type ReplyPacing } from '../../src/runtime/reply-plan/run-plan.js';
import type { TurnScope } from '../../src/runtime/turn/turn-context.js';

/** A memory channel that notes, with the (fake) clock, every call a plan makes. */
class PacedChannel extends MemoryChannel {
  readonly events: string[] = [];
  readonly #start = Date.now();
  #at = () => Date.now() - this.#start;
  override async send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    this.events.push(`${this.#at()} send ${text}${options?.replyTo ? ` (reply to ${options.replyTo})` : ''} [${options?.deliveryKey}]`);
    return super.send(target, text);
  }
  override async typing(target: ReplyTarget): Promise<void> {
    this.events.push(`${this.#at()} typing`);
    return super.typing(target);
  }
  override async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    this.events.push(`${this.#at()} react ${emoji} on ${messageId}`);
    return super.react(target, messageId, emoji);
  }
}

const pacing: ReplyPacing = { typingCharsPerSecond: 10, maxTypingSeconds: 6, maxTotalWaitSeconds: 60 };
const target: ReplyTarget = { channel: 'paced', conversationId: 'c1', accountId: 'ann', inReplyTo: ['77'], correlationId: 'corr', sessionId: 's1' };

/** What a plan run touches of its turn: the channel, where it goes, and the store's marks (recorded). */
function scopeFor(channel: MemoryChannel) {
  const marks: string[] = [];
  const warnings: string[] = [];
  const log = { info: () => undefined, warn: (_: unknown, message: string) => warnings.push(message), error: () => undefined };
  const scope = {
    channel,
    target,
    replyMessageId: 'reply-1',
    session: { id: 's1' },
    log,
    deps: {
      store: {
        deliveries: {
          markSent: async (id: string, channelMessageId: string) => void marks.push(`sent ${id} as ${channelMessageId}`),
          markFailed: async (id: string, reason: string) => void marks.push(`failed ${id}: ${reason}`),
        },
        messages: { markNotSent: async (_session: string, ids: readonly string[], reason: string) => void marks.push(`not sent ${ids.join(',')}: ${reason}`) },
      },
      cache: { forgetHistory: () => undefined },
    },
  } as unknown as TurnScope;
  return { scope, marks, warnings };
}

function planOf(steps: ReplyStep[], withRecords = false): PlanToRun {
  const effects = steps.filter((step) => step.kind === 'send' || step.kind === 'react');
  const sends = steps.filter((step) => step.kind === 'send');
  const deliveries = withRecords ? effects.map((_, part) => ({ id: `d${part}`, part }) as unknown as DeliveryRecord) : undefined;
  return { steps, displayIds: sends.map((_, index) => `msg-${index}`), deliveries };
}

const caps = (more: Partial<ChannelCapabilities> = {}): Partial<ChannelCapabilities> => ({ typing: true, reactions: true, typingIntervalMs: 200, ...more });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('carrying out a reply plan', () => {
  it('runs the steps in order with their waits, typing before each message for as long as a person would write it', async () => {
    const channel = new PacedChannel({ name: 'paced', capabilities: caps() });
    const { scope, marks } = scopeFor(channel);
    const plan = planOf(
      [
        { kind: 'send', text: 'Hi!', replyTo: null },
        { kind: 'wait', ms: 2_000 },
        { kind: 'react', emoji: '👍', messageId: '77' },
        { kind: 'typing', ms: 500 },
        { kind: 'send', text: 'Second one', replyTo: '77' },
      ],
      true,
    );
    const running = runPlan(scope, plan, pacing, undefined);
    await vi.runAllTimersAsync();
    const result = await running;

    // "Hi!" takes 0.3 s to type at 10 chars/s, "Second one" 1 s after the 0.5 s of fake typing; typing is renewed
    // every 200 ms while it lasts; the wait shows none.
    expect(channel.events).toEqual([
      '0 typing',
      '200 typing',
      '300 send Hi! [d0]',
      '2300 react 👍 on 77',
      '2300 typing',
      '2500 typing',
      '2700 typing',
      '2800 typing',
      '3000 typing',
      '3200 typing',
      '3400 typing',
      '3600 typing',
      '3800 typing',
      '3800 send Second one (reply to 77) [d2]',
    ]);
    expect(result.sentTexts).toEqual(['Hi!', 'Second one']);
    expect(result.stopped).toBeUndefined();
    expect(marks).toEqual(['sent d0 as corr:1', 'sent d1 as 77', 'sent d2 as corr:2']);
  });

  it('counts the typing before messages toward maxTotalWaitSeconds: what the waits leave, the first messages get', async () => {
    const channel = new PacedChannel({ name: 'paced', capabilities: caps({ typingIntervalMs: 10_000 }) });
    const { scope } = scopeFor(channel);
    // 30 characters each: 3 s of typing apiece at 10 chars/s; the plan may take 5 s in all and waits 1.5 s itself.
    const text = (n: number) => `${n}`.padEnd(30, '.');
    const plan = planOf([{ kind: 'wait', ms: 1_500 }, ...[1, 2, 3, 4].map((n): ReplyStep => ({ kind: 'send', text: text(n), replyTo: null }))]);
    const running = runPlan(scope, plan, { ...pacing, maxTotalWaitSeconds: 5 }, undefined);
    await vi.runAllTimersAsync();
    await running;

    expect(channel.events).toEqual([
      '1500 typing',
      `4500 send ${text(1)} [reply-1:0]`,
      '4500 typing',
      `5000 send ${text(2)} [reply-1:1]`,
      `5000 send ${text(3)} [reply-1:2]`,
      `5000 send ${text(4)} [reply-1:3]`,
    ]);
  });

  it('caps typing at maxTypingSeconds and shows none where typingCharsPerSecond is 0', () => {
    expect(typingMsFor('x'.repeat(1_000), pacing)).toBe(6_000);
    expect(typingMsFor('hello', { typingCharsPerSecond: 0, maxTypingSeconds: 6, maxTotalWaitSeconds: 60 })).toBe(0);
  });

  it('skips a reaction the channel cannot show, logging it once per channel, and goes on with the plan', async () => {
    const channel = new PacedChannel({ name: 'paced', capabilities: caps({ reactions: false, typing: false }) });
    const { scope, marks, warnings } = scopeFor(channel);
    const plan = planOf(
      [
        { kind: 'react', emoji: '👍', messageId: '77' },
        { kind: 'send', text: 'ok', replyTo: null },
      ],
      true,
    );
    for (let turn = 0; turn < 2; turn += 1) {
      const running = runPlan(scope, plan, pacing, undefined);
      await vi.runAllTimersAsync();
      expect((await running).sentTexts).toEqual(['ok']);
    }
    expect(channel.reactions).toEqual([]);
    expect(warnings.filter((line) => line.includes('reaction skipped'))).toHaveLength(1);
    expect(marks[0]).toBe('failed d0: skipped: the channel shows no reactions');
  });

  it('skips a reaction whose emoji the channel does not allow', async () => {
    const channel = new PacedChannel({ name: 'paced', capabilities: caps({ reactionEmoji: ['👍'] }) });
    const { scope } = scopeFor(channel);
    const running = runPlan(
      scope,
      planOf([
        { kind: 'react', emoji: '🦄', messageId: '77' },
        { kind: 'react', emoji: '👍', messageId: '77' },
      ]),
      pacing,
      undefined,
    );
    await vi.runAllTimersAsync();
    await running;
    expect(channel.reactions.map((reaction) => reaction.value.emoji)).toEqual(['👍']);
  });

  it('drops the rest of the plan when interrupted during a wait, recording what was not sent', async () => {
    const channel = new PacedChannel({ name: 'paced', capabilities: caps({ typing: false }) });
    const { scope, marks } = scopeFor(channel);
    const interrupt = new AbortController();
    const plan = planOf(
      [
        { kind: 'send', text: 'one', replyTo: null },
        { kind: 'wait', ms: 10_000 },
        { kind: 'react', emoji: '👍', messageId: '77' },
        { kind: 'send', text: 'two', replyTo: null },
      ],
      true,
    );
    const running = runPlan(scope, plan, pacing, interrupt.signal);
    await vi.advanceTimersByTimeAsync(4_000);
    interrupt.abort();
    const result = await running;

    expect(channel.events).toEqual(['300 send one [d0]']);
    expect(result).toMatchObject({ sentTexts: ['one'], stopped: 'interrupted' });
    expect(marks).toEqual(['sent d0 as corr:1', 'failed d1: interrupted', 'failed d2: interrupted', 'not sent msg-1: interrupted']);
    // No timer of the plan is left behind.
    expect(vi.getTimerCount()).toBe(0);
  });
});
