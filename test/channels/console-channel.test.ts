import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConsoleChannel } from '../../src/channels/console/console-channel.js';
import type { ApprovalDecision } from '../../src/domain/approval.js';
import { ChannelError } from '../../src/domain/errors.js';
import type { ApprovalOutcome, DecideOptions, ReplyTarget } from '../../src/domain/ports/channel.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';
import { answer, FakeChannelContext, targetFor } from './fake-pipeline.js';
import { TerminalScreen } from './terminal-screen.js';

const COLUMNS = 40;

/** A person at a terminal 40 columns wide: typed lines go in, the screen shows what they would read. */
function consoleDriver(): ChannelDriver & { screen: TerminalScreen; done: Promise<void> } {
  const input = new PassThrough();
  const output = new PassThrough();
  const screen = new TerminalScreen(COLUMNS);
  output.on('data', (chunk: Buffer) => screen.write(chunk.toString('utf8')));
  const channel = new ConsoleChannel({ input, output, color: true, columns: COLUMNS, conversationId: 'terminal' });
  // Everything after a `bot> ` up to the end of its line; what is erased is gone from the screen.
  const replies = (): string[] => screen.lines().flatMap((line) => (line.includes('bot> ') ? [line.slice(line.indexOf('bot> ') + 5)] : []));
  return {
    channel,
    screen,
    done: channel.done,
    manyConversations: false,
    acceptsWhileAnswering: false,
    conversationId: () => 'terminal',
    say: async (_name, text) => {
      input.write(`${text}\n`);
    },
    replies,
    errors: () => screen.lines().flatMap((line) => (line.includes('error: ') ? [line.slice(line.indexOf('error: ') + 7)] : [])),
    waiting: () => 0,
    sayAfterStop: async (_name, text) => {
      await channel.done;
      input.write(`${text}\n`);
      // Give a reader still attached every chance to see the line.
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    },
    close: async () => {
      input.end();
    },
  };
}

runChannelContract('console', async () => consoleDriver());

describe('ConsoleChannel', () => {
  it('hands the next line over only after the previous line was answered', async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    await driver.channel.start(context);
    await driver.say('c1', 'first');
    await driver.say('c1', 'second');
    const [first] = await context.waitForMessages(1);
    // The second line waits while the first one's turn runs.
    await new Promise((resolve) => setImmediate(resolve));
    expect(context.received).toHaveLength(1);
    expect(first).toMatchObject({ channel: 'console', accountId: 'local', conversationId: 'terminal', text: 'first', messageId: '1' });
    await answer(driver.channel, context, [first!], { stream: ['One.'], parts: ['One.'] });
    const [, second] = await context.waitForMessages(2);
    expect(second).toMatchObject({ text: 'second', messageId: '2' });
    await answer(driver.channel, context, [second!], { parts: ['Two.'] });
    await expect.poll(() => driver.replies('c1')).toEqual(['One.', 'Two.']);
    await driver.close();
    await driver.done;
  });

  it('shows a tool call as its label with ✓ or ✗, never the tool name or its result by default', async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    await driver.channel.start(context);
    await driver.say('c1', 'cancel it');
    const [message] = await context.waitForMessages(1);
    await answer(driver.channel, context, [message!], {
      tool: { name: 'cancel_booking', label: 'Cancelling your booking…', arguments: '{"id":"b-42"}', result: 'internal row 42 deleted' },
      stream: ['Done.'],
      parts: ['Done.'],
    });
    await expect.poll(() => driver.replies('c1')).toEqual(['Done.']);
    const text = driver.screen.lines().join('\n');
    expect(text).toContain('· Cancelling your booking… ✓');
    expect(text).not.toContain('cancel_booking');
    expect(text).not.toContain('internal row');
    expect(text).not.toContain('b-42');

    // A failed call without a label (a pipeline that resolves none): the generic line, marked ✗.
    await driver.say('c1', 'again');
    const [, again] = await context.waitForMessages(2);
    await answer(driver.channel, context, [again!], { tool: { name: 'cancel_booking', arguments: '{}', result: 'boom', isError: true }, parts: ['Sorry.'] });
    await expect.poll(() => driver.replies('c1')).toEqual(['Done.', 'Sorry.']);
    expect(driver.screen.lines().join('\n')).toContain('· Working on it… ✗');
  });

  it('shows the tool name and its result, not the label, with tool details on', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const channel = new ConsoleChannel({ input, output, showToolDetails: true });
    const context = new FakeChannelContext();
    await channel.start(context);
    input.write('cancel it\n');
    const [message] = await context.waitForMessages(1);
    await answer(channel, context, [message!], {
      tool: { name: 'cancel_booking', label: 'Cancelling your booking…', arguments: '{}', result: 'row 42\u001b[2J deleted' },
      parts: ['Done.'],
    });
    await expect.poll(() => text).toContain('bot> Done.');
    expect(text).toContain('· cancel_booking → row 42 [2J deleted');
    expect(text).not.toContain('Cancelling your booking');
    // The result's escape sequence reached the terminal as text, not as a command.
    expect(text).not.toContain('\u001b');
    input.end();
    await channel.done;
  });

  it('prints the error of a refused line and ends on /exit once the last turn settled', async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    await driver.channel.start(context);
    context.refuseNext(new ChannelError('inbound_invalid', 'console', 'The message is too long.'));
    await driver.say('c1', 'x'.repeat(50));
    await driver.say('c1', 'fine');
    await driver.say('c1', '/exit');
    await driver.say('c1', 'never read');
    const [, fine] = await context.waitForMessages(2);
    let ended = false;
    void driver.done.then(() => (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toBe(false);
    await answer(driver.channel, context, [fine!], { parts: ['Fine.'] });
    await driver.done;
    expect(driver.errors('c1')).toEqual(['The message is too long.']);
    expect(driver.replies('c1')).toEqual(['Fine.']);
    expect(context.received).toHaveLength(2);
  });

  it('marks withdrawn text on an output that cannot erase, then shows the reply', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const channel = new ConsoleChannel({ input, output });
    const context = new FakeChannelContext();
    await channel.start(context);
    input.write('hello\n');
    const [message] = await context.waitForMessages(1);
    await answer(channel, context, [message!], { discarded: ['Wrong'], parts: ['Right.'] });
    input.end();
    await channel.done;
    expect(text).toBe('you> bot> Wrong\n  · (withdrawn; the reply follows)\nbot> Right.\nyou> ');
  });
});

describe('ConsoleChannel: replies as actions', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("shows typing, then two messages as two blocks, then the reaction on the person's line", async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    const channel = driver.channel as ConsoleChannel;
    expect(channel.capabilities).toMatchObject({ typing: true, reactions: true });
    await channel.start(context);
    await driver.say('c1', 'can I come on Friday?');
    const [message] = await context.waitForMessages(1);
    const target = targetFor(channel, context, [message!]);

    // The screen shows no echo of the typed line (a terminal would put it after the prompt, then a line feed).
    await channel.typing!(target);
    expect(driver.screen.lines()).toEqual(['you> … typing']);
    // Renewed while it lasts: still one line.
    await channel.typing!(target);
    expect(driver.screen.lines()).toEqual(['you> … typing']);
    await channel.send(target, 'Friday works.', { deliveryKey: 'd-1' });
    await channel.typing!(target);
    await channel.send(target, 'Morning or afternoon?', { deliveryKey: 'd-2', replyTo: message!.messageId! });
    await channel.react!(target, message!.messageId!, '👍');
    channel.settle(target, {
      kind: 'answered',
      parts: [],
      outcome: {
        correlationId: target.correlationId,
        sessionId: target.sessionId,
        userId: 'u',
        reply: '',
        replyMessageId: 'r',
        status: 'completed',
        usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: 'USD' },
      },
    });

    await expect
      .poll(() => driver.screen.lines())
      .toEqual(['you> bot> Friday works.', 'bot> Morning or afternoon?', '  ↳ 👍 on "can I come on Friday?"', 'you> ']);
    await driver.close();
    await driver.done;
  });

  it('erases the typing line when a text reply streams in, and shows no typing while it streams', async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    await driver.channel.start(context);
    await driver.say('c1', 'hello');
    const [message] = await context.waitForMessages(1);
    const target = targetFor(driver.channel, context, [message!]);
    await driver.channel.typing!(target);
    driver.channel.progress!(target, { type: 'text_delta', messageId: 'draft', delta: 'Hi ' });
    await driver.channel.typing!(target);
    driver.channel.progress!(target, { type: 'text_delta', messageId: 'draft', delta: 'there.' });
    expect(driver.screen.lines()).toEqual(['you> bot> Hi there.']);
    await answer(driver.channel, context, [message!], { parts: ['Hi there.'] });
    expect(driver.screen.lines()).toEqual(['you> bot> Hi there.', 'you> ']);
  });

  it('erases the typing line by itself when it is not renewed', async () => {
    const driver = consoleDriver();
    const context = new FakeChannelContext();
    await driver.channel.start(context);
    await driver.say('c1', 'hello');
    const [message] = await context.waitForMessages(1);
    vi.useFakeTimers();
    await driver.channel.typing!(targetFor(driver.channel, context, [message!]));
    expect(driver.screen.lines()).toEqual(['you> … typing']);
    vi.advanceTimersByTime(4_999);
    expect(driver.screen.lines()).toEqual(['you> … typing']);
    vi.advanceTimersByTime(1);
    expect(driver.screen.lines()).toEqual(['you> ']);
  });

  it('shows no typing on an output that cannot erase it, and refuses a reaction that is not one emoji', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const channel = new ConsoleChannel({ input, output });
    expect(channel.capabilities.typing).toBe(false);
    const context = new FakeChannelContext();
    await channel.start(context);
    input.write('hello\n');
    const [message] = await context.waitForMessages(1);
    const target = targetFor(channel, context, [message!]);
    await channel.typing(target);
    await expect(channel.react(target, '1', '\u001b[2Jgotcha')).rejects.toMatchObject({ code: 'invalid_reaction' });
    await channel.react(target, '1', '🙂');
    await answer(channel, context, [message!], { parts: ['Hi.'] });
    input.end();
    await channel.done;
    expect(text).toBe('you>   ↳ 🙂 on "hello"\nbot> Hi.\nyou> ');
  });
});

describe('ConsoleChannel: approvals', () => {
  const approval = { id: 'apv-1', expiresAt: '2031-05-01T10:00:00.000Z' };
  const question = 'Before I go on, I need your yes: cancel booking B-7 on Friday';

  /** The fake context, also keeping the options of each decision and answering in `language`. */
  class DecidingContext extends FakeChannelContext {
    readonly decideOptions: (DecideOptions | undefined)[] = [];
    language = 'en';

    override async decideApproval(accountId: string, approvalId: string, decision: ApprovalDecision, options?: DecideOptions): Promise<ApprovalOutcome> {
      this.decideOptions.push(options);
      return super.decideApproval(accountId, approvalId, decision);
    }

    override async interfaceLanguage(): Promise<string> {
      return this.language;
    }
  }

  const settled = (driver: ReturnType<typeof consoleDriver>, target: ReplyTarget) =>
    driver.channel.settle!(target, {
      kind: 'answered',
      parts: [],
      outcome: {
        correlationId: target.correlationId,
        sessionId: target.sessionId,
        userId: 'u',
        reply: '',
        replyMessageId: 'r',
        status: 'completed',
        usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: 'USD' },
      },
    });

  /** Whether a line of the screen ends with `text` (the screen has no echo of typed lines: it follows the prompt). */
  const shows = (driver: ReturnType<typeof consoleDriver>, text: string) => driver.screen.lines().some((line) => line.endsWith(text));

  /** A chat whose first line's turn asked `question` for approval; resolves once the `[y/n]` prompt is up. */
  async function asked(context = new DecidingContext()) {
    const driver = consoleDriver();
    await driver.channel.start(context);
    await driver.say('c1', 'cancel my Friday booking');
    const [message] = await context.waitForMessages(1);
    const target = targetFor(driver.channel, context, [message!]);
    await driver.channel.send(target, question, { deliveryKey: 'd-1', approval });
    settled(driver, target);
    await expect.poll(() => driver.screen.lines().at(-1)).toBe('[y/n] you> ');
    return { driver, context, target };
  }

  it('shows the question with a [y/n] prompt and passes a yes on as the decision, not as a message', async () => {
    const { driver, context, target } = await asked();
    expect(driver.channel.capabilities.approvalButtons).toBe(true);
    expect(driver.replies('c1')).toEqual([question]);
    await driver.say('c1', 'Yes');
    await expect.poll(() => context.decisions).toEqual([{ accountId: 'local', approvalId: 'apv-1', decision: 'approved' }]);
    await expect.poll(() => shows(driver, '[y/n] you>   · ✅ Approved')).toBe(true);
    expect(context.received).toHaveLength(1);
    // The turn goes on and answers the decision (by the message id the channel gave it); then the prompt is back.
    const messageId = context.decideOptions[0]?.messageId;
    expect(messageId).toBeDefined();
    await new Promise((resolve) => setImmediate(resolve));
    // Nothing prompts before the turn that goes on has answered.
    expect(driver.screen.lines().slice(-2)).toEqual(['[y/n] you>   · ✅ Approved', '']);
    const resumed = { ...target, inReplyTo: [...target.inReplyTo, messageId!], correlationId: 'corr-resumed' };
    await driver.channel.send(resumed, 'Cancelled: Friday is free again.');
    settled(driver, resumed);
    await expect.poll(() => driver.screen.lines().at(-1)).toBe('you> ');
    expect(driver.replies('c1')).toEqual([question, 'Cancelled: Friday is free again.']);
    // The question is answered: a yes now is only a message.
    await driver.say('c1', 'yes');
    await context.waitForMessages(2);
    expect(context.received.map((received) => received.message.text)).toEqual(['cancel my Friday booking', 'yes']);
    expect(context.decisions).toHaveLength(1);
  });

  it.each([
    ['n', 'declined', 'en', '  · ❌ Declined'],
    ['NO!', 'declined', 'en', '  · ❌ Declined'],
    ['нет', 'declined', 'ru', '  · ❌ Отклонено'],
    ['Да', 'approved', 'ru', '  · ✅ Одобрено'],
    ['так', 'approved', 'uk', '  · ✅ Схвалено'],
    ['ні', 'declined', 'uk', '  · ❌ Відхилено'],
    ['是', 'approved', 'zh', '  · ✅ 已同意'],
    ['否', 'declined', 'zh', '  · ❌ 已拒绝'],
  ] as const)('takes %j as %s and says so in %s', async (word, decision, language, line) => {
    const context = new DecidingContext();
    context.language = language;
    const { driver } = await asked(context);
    await driver.say('c1', word);
    await expect.poll(() => context.decisions).toEqual([{ accountId: 'local', approvalId: 'apv-1', decision }]);
    await expect.poll(() => shows(driver, line)).toBe(true);
    expect(context.received).toHaveLength(1);
  });

  it('sends any other line as a message and keeps the question open for the next yes or no', async () => {
    const { driver, context } = await asked();
    await driver.say('c1', 'what does it cost to cancel?');
    const [, other] = await context.waitForMessages(2);
    expect(other).toMatchObject({ text: 'what does it cost to cancel?' });
    expect(context.decisions).toEqual([]);
    await answer(driver.channel, context, [other!], { parts: ['Nothing.'] });
    await expect.poll(() => driver.screen.lines().at(-1)).toBe('[y/n] you> ');
    await driver.say('c1', 'no');
    await expect.poll(() => context.decisions).toEqual([{ accountId: 'local', approvalId: 'apv-1', decision: 'declined' }]);
  });

  it.each([
    [{ kind: 'already', status: 'approved' }, '  · This was already decided.'],
    [{ kind: 'expired' }, '  · ⌛ No answer in time: not done'],
    [{ kind: 'not_found' }, '  · This request is no longer open.'],
  ] as const)('says what a decision that did not go through came to (%j), and prompts again at once', async (outcome, line) => {
    const context = new DecidingContext();
    context.approvalOutcome = outcome;
    const { driver } = await asked(context);
    await driver.say('c1', 'y');
    await expect.poll(() => driver.screen.lines().slice(-2)).toEqual([`[y/n] you> ${line}`, 'you> ']);
    expect(context.received).toHaveLength(1);
  });

  it('treats a yes as a message when nothing was asked', async () => {
    const driver = consoleDriver();
    const context = new DecidingContext();
    await driver.channel.start(context);
    await driver.say('c1', 'yes');
    const [message] = await context.waitForMessages(1);
    expect(message).toMatchObject({ text: 'yes' });
    expect(context.decisions).toEqual([]);
  });

  it('prompts for the answer to a question sent outside a turn of a typed line (after a restart)', async () => {
    const driver = consoleDriver();
    const context = new DecidingContext();
    await driver.channel.start(context);
    const target = { channel: 'console', conversationId: 'terminal', accountId: 'local', inReplyTo: ['9'], correlationId: 'corr-9', sessionId: 's' };
    await driver.channel.send(target, question, { deliveryKey: 'd-9', approval });
    expect(driver.screen.lines()).toEqual([`you> bot> ${question}`, '[y/n] you> ']);
    await driver.say('c1', 'yes');
    await expect.poll(() => context.decisions).toEqual([{ accountId: 'local', approvalId: 'apv-1', decision: 'approved' }]);
  });
});
