import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { ChannelRetryLaterError } from '../../src/domain/errors.js';
import type { ChannelContext, ReplyTarget, SendOptions, SentPart } from '../../src/domain/ports/channel.js';
import { sequenceScript, type ScriptedReply } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const plan = (...items: unknown[]): ScriptedReply => ({ text: JSON.stringify({ actions: items }) });
/** No typing before messages: these tests are about what is sent and stored, not the pacing (see reply-plan-run). */
const actions = (more: Record<string, unknown> = {}) => ({ agent: { replies: 'actions', actions: { typingCharsPerSecond: 0, ...more } } });

/** Every message item of a model call, as `role: text`. */
function seen(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' ? [`${item.role}: ${item.content ?? ''}`] : []));
}

/** A memory channel that keeps its context, to read the transcript the person would be shown. */
class ViewedChannel extends MemoryChannel {
  context!: ChannelContext;
  override async start(context: ChannelContext): Promise<void> {
    this.context = context;
    await super.start(context);
  }
}

describe('replies as actions: what is stored and what the model sees next', () => {
  it('sends nothing for ignore, still answers the message, and tells the model next turn that it chose not to answer', async () => {
    harness = await createHarness(
      sequenceScript([plan({ type: 'ignore', reason: 'just an emoji' }), plan({ type: 'send_message', text: 'Hello again.', reply_to: null })]),
    );
    const chat = new ViewedChannel({ name: 'chat' });
    const palaver = await harness.start(actions(), { channels: [chat] });

    const first = await chat.reply(await chat.say('👋', { accountId: 'ann', dedupeKey: 'k1' }));
    expect(first.parts).toEqual([]);
    expect(first.outcome.reply).toBe('');
    expect(chat.sent).toEqual([]);
    // Answered all the same: a redelivery is a duplicate, whose stored reply shows the person nothing.
    const redelivered = await chat.say('👋', { accountId: 'ann', dedupeKey: 'k1' });
    expect(redelivered).toMatchObject({ status: 'duplicate', answered: { text: '' } });

    const second = await chat.reply(await chat.say('are you there?', { accountId: 'ann' }));
    expect(second.parts).toEqual(['Hello again.']);
    expect(seen(harness.model.calls[1]!)).toEqual([
      'user: [message_id: m1] 👋',
      'assistant: (you chose not to answer)',
      'user: [message_id: m3] are you there?',
    ]);

    // The person is never shown the note: the transcript holds their messages and what was sent, nothing else.
    const transcript = await chat.context.transcript('ann', 'ann');
    expect(transcript.map((entry) => `${entry.role}: ${entry.text}`)).toEqual(['user: 👋', 'user: are you there?', 'assistant: Hello again.']);
    // The plan is kept as an audit record.
    const stored = await palaver.store.messages.listRecent(first.outcome.sessionId, { limit: 20, audience: 'audit' });
    expect(stored.map((message) => message.meta?.['replyPlan'])).toContainEqual([{ kind: 'ignore', reason: 'just an emoji' }]);
  });

  it('drops the rest of a plan when the person writes during a wait (interruptOnNewMessage), and the model learns what was not sent', async () => {
    harness = await createHarness(
      sequenceScript([
        plan(
          { type: 'send_message', text: 'Let me check.', reply_to: null },
          { type: 'wait', seconds: 30 },
          { type: 'send_message', text: 'It is open until 6.', reply_to: null },
        ),
        plan({ type: 'send_message', text: 'Sure, Saturday too.', reply_to: null }),
      ]),
    );
    const chat = new ViewedChannel({ name: 'chat' });
    await harness.start(actions({ interruptOnNewMessage: true }), { channels: [chat] });

    const first = await chat.say('when are you open?', { accountId: 'bob' });
    await expect.poll(() => chat.sent.length).toBe(1);
    // The plan now waits 30 s; the person writes again and is not talked over.
    const second = await chat.say('and on saturday?', { accountId: 'bob' });
    const answered = await chat.reply(first);
    expect(answered.outcome.reply).toBe('Let me check.');
    expect((await chat.reply(second)).parts).toEqual(['Sure, Saturday too.']);
    expect(chat.sent.map((part) => part.value)).toEqual(['Let me check.', 'Sure, Saturday too.']);

    const input = seen(harness.model.calls[1]!);
    expect(input.slice(1, 3)).toEqual([
      'assistant: Let me check.',
      'assistant: (not sent, the person wrote again first; the person never saw this:) It is open until 6.',
    ]);
    const transcript = await chat.context.transcript('bob', 'bob');
    expect(transcript.map((entry) => entry.text)).not.toContain('It is open until 6.');
  });

  it('lets messages that arrive while a plan runs wait for the next turn when interrupting is off', async () => {
    harness = await createHarness(
      sequenceScript([
        plan(
          { type: 'send_message', text: 'One moment.', reply_to: null },
          { type: 'wait', seconds: 0.2 },
          { type: 'send_message', text: 'Done.', reply_to: null },
        ),
        plan({ type: 'send_message', text: 'Next.', reply_to: null }),
      ]),
    );
    const chat = new ViewedChannel({ name: 'chat' });
    await harness.start(actions(), { channels: [chat] });
    const first = await chat.say('start', { accountId: 'cy' });
    await expect.poll(() => chat.sent.length).toBe(1);
    const second = await chat.say('more', { accountId: 'cy' });
    expect((await chat.reply(first)).parts).toEqual(['One moment.', 'Done.']);
    expect((await chat.reply(second)).parts).toEqual(['Next.']);
  });

  it('stores every send and reaction of a plan in the outbox in plan order on a channel that delivers offline, each marked sent', async () => {
    harness = await createHarness(
      sequenceScript([
        plan(
          { type: 'send_message', text: 'Got it.', reply_to: 'm1' },
          { type: 'add_reaction', emoji: '👍', message_id: 'm1' },
          { type: 'send_messages', messages: ['A', 'B'] },
        ),
      ]),
    );
    const chat = new ViewedChannel({ name: 'chat', capabilities: { offlineDelivery: true, reactions: true } });
    const palaver = await harness.start(actions(), { channels: [chat] });
    const reply = await chat.reply(await chat.say('order 12', { accountId: 'dan' }));
    expect(reply.parts).toEqual(['Got it.', 'A', 'B']);
    expect(chat.reactions.map((reaction) => reaction.value)).toEqual([{ messageId: 'm1', emoji: '👍' }]);
    const records = await palaver.store.deliveries.listForReply(reply.outcome.replyMessageId);
    expect(records.map((record) => [record.part, record.text, record.replyTo, record.reaction, record.state])).toEqual([
      [0, 'Got it.', 'm1', null, 'sent'],
      [1, '', null, { emoji: '👍', messageId: 'm1' }, 'sent'],
      [2, 'A', null, null, 'sent'],
      [3, 'B', null, null, 'sent'],
    ]);
    // Each message sent is its own display message, in order; the first under the turn's reply id.
    const display = await palaver.store.messages.listRecent(reply.outcome.sessionId, { limit: 10, audience: 'display' });
    expect(display.map((message) => `${message.role}: ${message.content}`)).toEqual(['user: order 12', 'assistant: Got it.', 'assistant: A', 'assistant: B']);
    expect(display[1]!.id).toBe(reply.outcome.replyMessageId);
  });

  it('leaves the rest of a plan to the outbox when the messenger asks to wait, and recovery carries it out once, quoting and reacting as planned', async () => {
    /** Asks to wait once, at the first message, as a Telegram flood wait does; notes how each step arrived. */
    class FloodingChannel extends ViewedChannel {
      readonly arrived: string[] = [];
      #flooded = false;
      override async send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
        if (!this.#flooded) {
          this.#flooded = true;
          throw new ChannelRetryLaterError(this.name, 300, 'FLOOD_WAIT_1');
        }
        this.arrived.push(`send ${text}${options?.replyTo ? ` quoting ${options.replyTo}` : ''}`);
        return super.send(target, text);
      }
      override async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
        this.arrived.push(`react ${emoji} on ${messageId}`);
        return super.react(target, messageId, emoji);
      }
    }
    harness = await createHarness(
      sequenceScript([
        plan(
          { type: 'send_message', text: 'Checking.', reply_to: 'm1' },
          { type: 'wait', seconds: 20 },
          { type: 'add_reaction', emoji: '👍', message_id: 'm1' },
          { type: 'send_message', text: 'Booked.', reply_to: 'm1' },
        ),
      ]),
    );
    const chat = new FloodingChannel({ name: 'chat', capabilities: { offlineDelivery: true, reactions: true } });
    const palaver = await harness.start({ ...actions(), inbox: { leaseMs: 300 } }, { channels: [chat] });
    const { outcome } = await chat.reply(await chat.say('a table at 8?', { accountId: 'eve' }));
    expect(outcome.reply).toBe('');

    await expect
      .poll(() => chat.arrived, { timeout: 15_000, interval: 50 })
      .toEqual(['send Checking. quoting m1', 'react 👍 on m1', 'send Booked. quoting m1']);
    await expect
      .poll(async () => (await palaver.store.deliveries.listForReply(outcome.replyMessageId)).map((record) => record.state), { timeout: 5_000 })
      .toEqual(['sent', 'sent', 'sent']);
    expect(harness.model.calls).toHaveLength(1);
  }, 30_000);
});
