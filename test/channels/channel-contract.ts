import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChannelError } from '../../src/domain/errors.js';
import type { Channel } from '../../src/domain/ports/channel.js';
import { answer, FakeChannelContext } from './fake-pipeline.js';

/**
 * A person on a channel, as the contract suite sees them: they say things in a conversation and read what the
 * channel shows them. Each channel's test file brings one.
 */
export interface ChannelDriver {
  readonly channel: Channel;
  /** The channel serves several conversations at once (a terminal chat serves one). */
  readonly manyConversations: boolean;
  /**
   * The channel hands over a second message of a conversation while the first awaits its reply, so the pipeline
   * can answer both in one turn (a terminal chat waits for each line's reply first).
   */
  readonly acceptsWhileAnswering: boolean;
  /** The channel's conversation id for the person's conversation `name` (`c1`, `c2`). */
  conversationId(name: string): string;
  /** The person sends `text`; resolves once the channel has it (not once it is answered). */
  say(name: string, text: string): Promise<void>;
  /** The bot's messages the person sees in the conversation, in order, each as one whole text. */
  replies(name: string): readonly string[] | Promise<readonly string[]>;
  /** The error notices the person sees in the conversation. */
  errors(name: string): readonly string[];
  /**
   * Whether the person is told when the pipeline refuses their message (default true). A person's own messenger
   * account (the Telegram user account) tells nothing: Palaver's canned notice would give the agent away.
   */
  readonly tellsRefusals?: boolean;
  /** Requests still waiting for an answer (an open SSE run, …); channels without such requests return 0. */
  waiting(name: string): number;
  /**
   * A redelivered message whose turn has not answered yet waits for that turn's reply instead of being dropped (a
   * retried web run attaches to its turn). Default false.
   */
  readonly attachesRetries?: boolean;
  /** The person tries to say `text` after `stop`; resolves once the channel had every chance to take it. */
  sayAfterStop(name: string, text: string): Promise<void>;
  /** Ends whatever the driver started (servers, streams). */
  close(): Promise<void>;
}

/**
 * The `Channel` contract: what a person on any channel would notice. Run it against a channel with
 * `runChannelContract('my channel', async () => driver)`; the suite starts the channel with a fake pipeline
 * (`FakeChannelContext`) and answers accepted messages itself, in the pipeline's order of outbound calls.
 */
export function runChannelContract(label: string, makeDriver: () => Promise<ChannelDriver>): void {
  describe(`Channel contract: ${label}`, () => {
    let driver: ChannelDriver;
    let context: FakeChannelContext;
    let channel: Channel;

    beforeEach(async () => {
      driver = await makeDriver();
      channel = driver.channel;
      context = new FakeChannelContext();
      await channel.start(context);
    });

    afterEach(async () => {
      await channel.stop();
      await driver.close();
    });

    it('hands an inbound message to accept with its own name and the right conversation', async () => {
      await driver.say('c1', 'Hello there');
      const [message] = await context.waitForMessages(1);
      expect(message).toMatchObject({ channel: channel.name, conversationId: driver.conversationId('c1'), text: 'Hello there' });
      expect(message!.accountId).not.toBe('');
      await answer(channel, context, [message!], { parts: ['Hi!'], stream: ['Hi!'] });
      await expect.poll(() => driver.replies('c1')).toEqual(['Hi!']);
    });

    it('shows a reply sent in parts whole and in order', async () => {
      await driver.say('c1', 'Tell me a long story');
      const [message] = await context.waitForMessages(1);
      const parts = ['Once upon a time there was a channel.', 'It delivered every part in order.', 'The end.'];
      await answer(channel, context, [message!], { parts });
      await expect.poll(() => driver.replies('c1')).toEqual(parts);
      expect(driver.errors('c1')).toEqual([]);
    });

    it('shows streamed text once when the same text is then sent', async () => {
      await driver.say('c1', 'What time is it?');
      const [message] = await context.waitForMessages(1);
      await answer(channel, context, [message!], {
        stream: ['It is ', '10:30 ', 'in Zurich.'],
        parts: ['It is 10:30 in Zurich.'],
        tool: { name: 'current_time', arguments: '{"zone":"Europe/Zurich"}', result: '10:30' },
      });
      await expect.poll(() => driver.replies('c1')).toEqual(['It is 10:30 in Zurich.']);
    });

    it('after a discard shows only the text that was sent', async () => {
      await driver.say('c1', 'Are you there?');
      const [message] = await context.waitForMessages(1);
      await answer(channel, context, [message!], {
        discarded: ['Broken half', ' of an answ'],
        stream: ['Yes, '],
        parts: ['Yes, I am here.'],
      });
      await expect.poll(() => driver.replies('c1')).toEqual(['Yes, I am here.']);
      expect((await driver.replies('c1')).join(' ')).not.toContain('Broken');
    });

    it('gives a refused message a clear error and keeps serving', async () => {
      // The pipeline's own refusal of an oversized message. A channel may pass its text on (web, terminal) or tell the
      // person in words of its own (Telegram's notice in their language): either way the person reads why.
      context.refuseNext(new ChannelError('inbound_invalid', channel.name, 'The message is too long: 30 characters, at most 10.'));
      await driver.say('c1', 'A message that is far too long');
      await context.waitForMessages(1);
      if (driver.tellsRefusals === false) expect(driver.errors('c1')).toEqual([]);
      else await expect.poll(() => driver.errors('c1').join('\n')).toMatch(/too long/i);

      await driver.say('c1', 'Short');
      const [, second] = await context.waitForMessages(2);
      await answer(channel, context, [second!], { parts: ['Better.'] });
      await expect.poll(() => driver.replies('c1')).toEqual(['Better.']);
    });

    it('does not answer a duplicate, and answers the next message', async () => {
      context.duplicateNext();
      await driver.say('c1', 'Sent twice');
      await driver.say('c1', 'Something new');
      const [, next] = await context.waitForMessages(2);
      expect(next!.text).toBe('Something new');
      await answer(channel, context, [next!], { parts: ['Only this answer.'] });
      await expect.poll(() => driver.replies('c1')).toEqual(['Only this answer.']);
      // The redelivered message's own turn never answers here: a channel that attaches retries still waits for it.
      await expect.poll(() => driver.waiting('c1')).toBe(driver.attachesRetries === true ? 1 : 0);
      expect(driver.errors('c1')).toEqual([]);
    });

    it('leaves no half reply when a turn ends without one, and keeps serving', async () => {
      await driver.say('c1', 'Break, please');
      const [first] = await context.waitForMessages(1);
      await answer(channel, context, [first!], {
        stream: ['Half a tho'],
        parts: [],
        error: new ChannelError('turn_failed', channel.name, 'The agent could not answer; try again.'),
      });
      await expect.poll(() => driver.waiting('c1')).toBe(0);
      await expect.poll(() => driver.replies('c1')).toEqual([]);

      await driver.say('c1', 'Again');
      const [, second] = await context.waitForMessages(2);
      await answer(channel, context, [second!], { parts: ['Now it works.'] });
      await expect.poll(() => driver.replies('c1')).toEqual(['Now it works.']);
    });

    it('delivers the reply to a batch of messages once', async ({ skip }) => {
      if (!driver.acceptsWhileAnswering) skip('this channel hands over one message at a time');
      await driver.say('c1', 'First thought');
      await driver.say('c1', 'Second thought');
      const messages = await context.waitForMessages(2);
      await answer(channel, context, messages, { stream: ['Both ', 'noted.'], parts: ['Both noted.'] });
      await expect.poll(() => driver.replies('c1')).toEqual(['Both noted.']);
      // No request of the batch is left hanging, and the reply did not come twice.
      await expect.poll(() => driver.waiting('c1')).toBe(0);
      expect(await driver.replies('c1')).toEqual(['Both noted.']);
    });

    it('keeps two conversations at once apart: each sees only its own reply', async ({ skip }) => {
      if (!driver.manyConversations) skip('this channel serves one conversation');
      await driver.say('c1', 'I am one');
      await driver.say('c2', 'I am two');
      const [one, two] = await context.waitForMessages(2);
      expect(one!.conversationId).not.toBe(two!.conversationId);
      // Answered in the opposite order, both at once.
      await Promise.all([
        answer(channel, context, [two!], { stream: ['For ', 'two.'], parts: ['For two.'] }),
        answer(channel, context, [one!], { stream: ['For ', 'one.'], parts: ['For one.'] }),
      ]);
      await expect.poll(() => driver.replies('c1')).toEqual(['For one.']);
      await expect.poll(() => driver.replies('c2')).toEqual(['For two.']);
    });

    it('stops safely twice and takes no message after stop', async () => {
      await channel.stop();
      await channel.stop();
      await driver.sayAfterStop('c1', 'Anyone?');
      expect(context.received).toHaveLength(0);
    });
  });
}
