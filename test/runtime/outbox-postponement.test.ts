import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { ChannelRetryLaterError } from '../../src/domain/errors.js';
import type { ReplyTarget, SendOptions } from '../../src/domain/ports/channel.js';
import type { Palaver } from '../../src/app.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A short lease: a recovery round every 100 ms. */
const LEASE = { inbox: { leaseMs: 300 } };
const ROUND_MS = 100;

interface Attempt {
  readonly text: string;
  readonly conversationId: string;
  readonly deliveryKey: string | undefined;
  readonly at: number;
  readonly refused: boolean;
}

/**
 * A messenger that asks to wait, as Telegram's flood wait does: the first attempt to send a scripted text is refused
 * with `ChannelRetryLaterError` and the scripted wait; every attempt (and its delivery key) is recorded. It does not
 * remember the wait itself, so nothing but Palaver keeps the parts after the refused one from overtaking it.
 */
class FloodingChannel extends MemoryChannel {
  readonly attempts: Attempt[] = [];
  readonly #floods: Map<string, number>;

  constructor(floods: Record<string, number>) {
    super({ name: 'phone', capabilities: { offlineDelivery: true, maxMessageChars: 20 } });
    this.#floods = new Map(Object.entries(floods));
  }

  override async send(target: ReplyTarget, text: string, options?: SendOptions) {
    const retryAfterMs = this.#floods.get(text);
    this.#floods.delete(text);
    this.attempts.push({ text, conversationId: target.conversationId, deliveryKey: options?.deliveryKey, at: Date.now(), refused: retryAfterMs !== undefined });
    if (retryAfterMs !== undefined) throw new ChannelRetryLaterError(this.name, retryAfterMs, `FLOOD_WAIT_${Math.ceil(retryAfterMs / 1000)}`);
    return super.send(target, text);
  }

  /** The texts sent to a conversation, in order. */
  sentTo(conversationId: string): string[] {
    return this.sent.filter((sent) => sent.target.conversationId === conversationId).map((sent) => sent.value);
  }

  attemptsOf(text: string): Attempt[] {
    return this.attempts.filter((attempt) => attempt.text === text);
  }
}

/** The model repeats what it was told, so a reply's parts are known in advance. */
const echo = (call: Parameters<typeof userTexts>[0]) => ({ text: userTexts(call).at(-1)! });
const REPLY = 'First part here. Second part here. Third part here.';
const PARTS = ['First part here.', 'Second part here.', 'Third part here.'];

async function postponedCount(palaver: Palaver): Promise<string> {
  return palaver.metrics.registry.getSingleMetricAsString('palaver_reply_parts_postponed_total');
}

describe('outbox postponement (the channel asks to wait)', () => {
  it('keeps the refused part and the rest of the reply in the outbox and sends each once, in order, when allowed', async () => {
    harness = await createHarness(echo);
    const phone = new FloodingChannel({ 'Second part here.': 800 });
    const palaver = await harness.start(LEASE, { channels: [phone] });
    const said = await phone.say(REPLY, { accountId: 'ann' });
    // The turn settles with the part sent so far; the person is not told of any failure.
    const { outcome, parts } = await phone.reply(said);
    expect(outcome.status).toBe('completed');
    expect(parts).toEqual(['First part here.']);
    const refused = phone.attemptsOf('Second part here.')[0]!;

    await expect.poll(() => phone.sentTo('ann'), { timeout: 15_000, interval: 50 }).toEqual(PARTS);
    const records = await palaver.store.deliveries.listForReply(outcome.replyMessageId);
    expect(records.map((record) => record.state)).toEqual(['sent', 'sent', 'sent']);
    // Every attempt at a part carries its outbox record's id: a messenger that dedupes by it drops a repeat.
    for (const [index, text] of PARTS.entries()) {
      expect(phone.attemptsOf(text).map((attempt) => attempt.deliveryKey)).toEqual(index === 1 ? [records[1]!.id, records[1]!.id] : [records[index]!.id]);
    }
    // Not before the wait ran out, and within a few recovery rounds after it (a loaded machine gets slack).
    const resent = phone.attemptsOf('Second part here.')[1]!;
    expect(resent.at - refused.at).toBeGreaterThanOrEqual(800);
    expect(resent.at - refused.at).toBeLessThan(800 + 40 * ROUND_MS);
    expect(phone.attemptsOf('Third part here.')[0]!.at).toBeGreaterThanOrEqual(resent.at);

    expect(await postponedCount(palaver)).toContain('palaver_reply_parts_postponed_total{channel="phone"} 2');
    const warned = harness.logs.find((line) => line.msg === 'the channel asked to wait; reply parts stay in the outbox');
    expect(warned).toMatchObject({ level: 40, retryAfterMs: 800, correlationId: outcome.correlationId, parts: [1, 2] });
    expect(harness.logs.filter((line) => line.msg === 'could not send the reply')).toEqual([]);
  }, 30_000);

  it('sends a postponed part after a restart, from the same database file, with the same delivery key', async () => {
    harness = await createHarness(echo);
    const before = new FloodingChannel({ 'First part here.': 1_500 });
    const first = await harness.start(LEASE, { channels: [before] });
    const { outcome, parts } = await before.reply(await before.say(REPLY, { accountId: 'ann' }));
    expect(parts).toEqual([]);
    await first.close();
    expect(before.sentTo('ann')).toEqual([]);

    const after = new FloodingChannel({});
    const second = await harness.start(LEASE, { channels: [after] });
    await expect.poll(() => after.sentTo('ann'), { timeout: 15_000, interval: 50 }).toEqual(PARTS);
    expect(after.attempts[0]!.at - before.attempts[0]!.at).toBeGreaterThanOrEqual(1_500);
    expect(after.attempts[0]!.deliveryKey).toBe(before.attempts[0]!.deliveryKey);
    expect((await second.store.deliveries.listForReply(outcome.replyMessageId)).map((record) => record.state)).toEqual(['sent', 'sent', 'sent']);
    // The model was asked once: only the sending waited.
    expect(harness.model.calls).toHaveLength(1);
  }, 30_000);

  it('holds a later reply of the conversation behind the postponed one, and no other conversation', async () => {
    harness = await createHarness(echo);
    const phone = new FloodingChannel({ 'First part here.': 1_200 });
    const palaver = await harness.start(LEASE, { channels: [phone] });
    await phone.reply(await phone.say(REPLY, { accountId: 'ann' }));
    // Ann writes again while her first reply waits: the answer goes after it, not before.
    const again = await phone.reply(await phone.say('And one more.', { accountId: 'ann' }));
    expect(again.parts).toEqual([]);
    // Bob is not held up by Ann's wait.
    const bob = await phone.reply(await phone.say('Hello from Bob.', { accountId: 'bob' }));
    expect(bob.parts).toEqual(['Hello from Bob.']);
    expect(phone.sentTo('ann')).toEqual([]);

    await expect.poll(() => phone.sentTo('ann'), { timeout: 15_000, interval: 50 }).toEqual([...PARTS, 'And one more.']);
    expect(phone.attemptsOf('And one more.')).toHaveLength(1);
    expect(await postponedCount(palaver)).toContain('palaver_reply_parts_postponed_total{channel="phone"} 4');
  }, 30_000);

  it('in recovery, postpones the refused part with the later parts of its conversation and sends the others', async () => {
    harness = await createHarness(echo);
    const phone = new FloodingChannel({ 'Ann part one.': 1_000 });
    const palaver = await harness.start(LEASE, { channels: [phone] });
    // Replies a stopped process stored but never sent: Ann's (two parts) and Bob's, all taken in one round.
    const orphan = async (accountId: string, texts: readonly string[]) => {
      const { user } = await palaver.store.users.resolveAccount({ channel: 'phone', accountId });
      const session = await palaver.store.sessions.open({ userId: user.id, channel: 'phone', conversationId: accountId });
      const replyMessageId = `reply-${accountId}`;
      const inReplyTo = ['m1'];
      await palaver.store.deliveries.add(
        texts.map((text, part) => ({
          sessionId: session.id,
          replyMessageId,
          part,
          text,
          channel: 'phone',
          conversationId: accountId,
          accountId,
          inReplyTo,
          correlationId: `corr-${accountId}`,
        })),
        { owner: 'a stopped process', leaseMs: 1 },
      );
    };
    await orphan('ann', ['Ann part one.', 'Ann part two.']);
    await orphan('bob', ['Bob part one.']);

    await expect.poll(() => phone.sentTo('bob'), { timeout: 15_000, interval: 50 }).toEqual(['Bob part one.']);
    await expect.poll(() => phone.sentTo('ann'), { timeout: 15_000, interval: 50 }).toEqual(['Ann part one.', 'Ann part two.']);
    // Part two was not tried while part one waited (the channel would have taken it, out of order).
    expect(phone.attempts.filter((attempt) => attempt.conversationId === 'ann').map((attempt) => [attempt.text, attempt.refused])).toEqual([
      ['Ann part one.', true],
      ['Ann part one.', false],
      ['Ann part two.', false],
    ]);
    expect(phone.attemptsOf('Bob part one.')[0]!.at).toBeLessThan(phone.attemptsOf('Ann part one.')[1]!.at);
    const [first, resent] = phone.attemptsOf('Ann part one.');
    expect(resent!.at - first!.at).toBeGreaterThanOrEqual(1_000);
    expect(resent!.deliveryKey).toBe(first!.deliveryKey);
    expect(await postponedCount(palaver)).toContain('palaver_reply_parts_postponed_total{channel="phone"} 2');
  }, 30_000);

  it('treats a wait asked by a channel without an outbox as a refusal, as before', async () => {
    harness = await createHarness(echo);
    const web = new (class extends MemoryChannel {
      override async send(): Promise<never> {
        throw new ChannelRetryLaterError(this.name, 5_000, 'slow down');
      }
    })({ name: 'live' });
    const palaver = await harness.start(LEASE, { channels: [web] });
    const { parts } = await web.reply(await web.say('hi', { accountId: 'cy' }));
    expect(parts).toEqual([]);
    expect(harness.logs.find((line) => line.msg === 'could not send the reply')).toMatchObject({ level: 50 });
    expect(await postponedCount(palaver)).not.toContain('channel="live"');
  }, 30_000);
});
