import { MemoryStorage } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import { TelegramUserChannel } from '../../../src/channels/telegram-user/telegram-user-channel.js';
import { ChannelError } from '../../../src/domain/errors.js';
import type { ReplyTarget } from '../../../src/domain/ports/channel.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';
import { FakeChannelContext } from '../fake-pipeline.js';

// What replies as actions ask of the user account, channel level: the real mtcute client on the fake MTProto server,
// which checks what Telegram checks (a reaction's message and emoji).
let channel: TelegramUserChannel | undefined;
afterEach(async () => {
  await channel?.stop();
  channel = undefined;
});

async function started(): Promise<{ telegram: FakeMtproto; channel: TelegramUserChannel; context: FakeChannelContext }> {
  const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
  channel = new TelegramUserChannel({
    apiId: 1,
    apiHash: 'fake',
    session: new MemoryStorage(),
    network: fakeMtprotoLink(telegram),
    quietWindowMs: 0,
    mtcuteLogLevel: 0,
    logger: silentLogger(),
  });
  const context = new FakeChannelContext();
  await channel.start(context);
  return { telegram, channel, context };
}

function targetOf(chatId: number, inReplyTo: readonly string[]): ReplyTarget {
  return { channel: 'telegram-user', conversationId: String(chatId), accountId: String(chatId), inReplyTo, correlationId: 'corr', sessionId: 's' };
}

describe('telegram user account: what replies as actions use', () => {
  it('reports Telegram reaction emoji as the ones it accepts', async () => {
    const { channel } = await started();
    expect(channel.capabilities).toMatchObject({ reactions: true, typing: true });
    expect(channel.capabilities.reactionEmoji).toEqual(expect.arrayContaining(['👍', '❤', '❤️', '🙏']));
    expect(channel.capabilities.reactionEmoji).not.toContain('🍕');
  });

  it('shows typing, sends two messages as two, quotes the message asked for, and reacts to the right message', async () => {
    const { telegram, channel, context } = await started();
    const ann = telegram.addUser({ firstName: 'Ann' });
    const hello = telegram.incoming(ann.id, 'hello');
    const question = telegram.incoming(ann.id, 'is the doctor in today?');
    await context.waitForMessages(2, 15_000);
    const target = targetOf(ann.id, [String(hello.id), String(question.id)]);

    await channel.typing(target);
    expect(telegram.typing).toEqual([expect.objectContaining({ chatId: ann.id, action: 'sendMessageTypingAction' })]);

    await channel.send(target, 'Hi Ann!', { deliveryKey: 'k1' });
    await channel.send(target, 'Yes, until **five**.', { deliveryKey: 'k2', replyTo: String(question.id) });
    const sent = telegram.sent(ann.id);
    expect(sent.map((message) => message.text)).toEqual(['Hi Ann!', 'Yes, until five.']);
    expect(sent.map((message) => message.replyToId)).toEqual([undefined, question.id]);

    await channel.react(target, String(hello.id), '🙏');
    await channel.react(target, String(question.id), '❤️');
    expect(telegram.reactions.map(({ chatId, messageId, emoji }) => ({ chatId, messageId, emoji }))).toEqual([
      { chatId: ann.id, messageId: hello.id, emoji: '🙏' },
      { chatId: ann.id, messageId: question.id, emoji: '❤' },
    ]);
  });

  it('refuses a reaction Telegram refuses with a ChannelError, and does not ask Telegram for an emoji outside its list', async () => {
    const { telegram, channel, context } = await started();
    const bob = telegram.addUser({ firstName: 'Bob' });
    const hi = telegram.incoming(bob.id, 'hi');
    await context.waitForMessages(1, 15_000);
    const target = targetOf(bob.id, [String(hi.id)]);

    const invented = channel.react(target, '987654', '👍');
    await expect(invented).rejects.toBeInstanceOf(ChannelError);
    await expect(invented).rejects.toMatchObject({ code: 'reaction_refused', message: expect.stringContaining('MESSAGE_ID_INVALID') });
    await expect(channel.react(target, String(hi.id), '🍕')).rejects.toMatchObject({ code: 'reaction_refused' });
    expect(telegram.callsOf('messages.sendReaction')).toHaveLength(1);
    expect(telegram.reactions).toEqual([]);
    // The channel goes on: the next send and reaction work; a quote of a message that is gone is left out.
    await channel.send(target, 'Hello Bob', { deliveryKey: 'k', replyTo: '424242' });
    expect(telegram.sent(bob.id)).toEqual([expect.objectContaining({ text: 'Hello Bob', replyToId: undefined })]);
    await channel.react(target, String(hi.id), '👍');
    expect(telegram.reactions).toEqual([expect.objectContaining({ messageId: hi.id, emoji: '👍' })]);
  });
});
