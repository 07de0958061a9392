import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { conversationIdOf } from '../../src/channels/telegram-bot/address.js';
import { TelegramBotChannel } from '../../src/channels/telegram-bot/index.js';
import { ChannelError } from '../../src/domain/errors.js';
import type { ReplyTarget } from '../../src/domain/ports/channel.js';
import { createLogger } from '../../src/observability/logger.js';
import { startFakeTelegram, type FakeTelegram } from '../../src/testing/index.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';

// What replies as actions ask of the bot, channel level: typing, separate messages, quotes and reactions, against
// the fake Bot API through grammY (it checks what Telegram checks: a reaction's message and emoji, a quote's message).
let telegram: FakeTelegram | undefined;
let channel: TelegramBotChannel | undefined;
afterEach(async () => {
  await channel?.stop();
  await telegram?.close();
  channel = undefined;
  telegram = undefined;
});

async function started(): Promise<{ telegram: FakeTelegram; channel: TelegramBotChannel; context: FakeChannelContext; logs: Record<string, unknown>[] }> {
  telegram = await startFakeTelegram();
  const logs: Record<string, unknown>[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  channel = new TelegramBotChannel({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    drafts: false,
    pollTimeoutSeconds: 1,
    logger: createLogger({ level: 'info', destination: sink }),
  });
  const context = new FakeChannelContext();
  await channel.start(context);
  return { telegram, channel, context, logs };
}

function targetOf(conversationId: string, accountId: number, inReplyTo: readonly string[]): ReplyTarget {
  return { channel: 'telegram-bot', conversationId, accountId: String(accountId), inReplyTo, correlationId: `corr-${inReplyTo.join('-')}`, sessionId: 's' };
}

describe('telegram bot: what replies as actions use', () => {
  it('reports Telegram reaction emoji as the ones it accepts, in both spellings of a heart', async () => {
    const { channel } = await started();
    expect(channel.capabilities).toMatchObject({ reactions: true, typing: true });
    expect(channel.capabilities.reactionEmoji).toEqual(expect.arrayContaining(['👍', '❤', '❤️', '🔥', '🙏', '👀']));
    expect(channel.capabilities.reactionEmoji).not.toContain('🍕');
  });

  it('shows typing, sends two messages as two, quotes the message asked for, and reacts to the right message', async () => {
    const { telegram, channel, context } = await started();
    telegram.sendText({ chatId: 4242, text: 'first' });
    telegram.sendText({ chatId: 4242, text: 'do you have a room tonight?' });
    const [first, second] = await context.waitForMessages(2);
    const target = targetOf(conversationIdOf({ chatId: 4242 }), 4242, [first!.messageId!, second!.messageId!]);

    await channel.typing(target);
    expect(telegram.callsOf('sendChatAction').map((call) => call.params)).toEqual([{ chat_id: 4242, action: 'typing' }]);

    await channel.send(target, 'Hello!', { deliveryKey: 'd1' });
    await channel.send(target, 'Yes, *one* is free.', { deliveryKey: 'd2', replyTo: second!.messageId! });
    const sent = telegram.sentTo(4242);
    expect(sent.map((message) => message.text)).toEqual(['Hello!', 'Yes, one is free.']);
    // A private chat quotes nothing unless asked; the second part quotes the question.
    expect(sent.map((message) => message.replyToMessageId)).toEqual([undefined, Number(second!.messageId)]);
    expect(telegram.callsOf('sendMessage')[1]!.params['reply_parameters']).toEqual({
      message_id: Number(second!.messageId),
      allow_sending_without_reply: true,
    });

    await channel.react(target, first!.messageId!, '👍');
    // A model's ❤️ (with U+FE0F) is Telegram's ❤.
    await channel.react(target, second!.messageId!, '❤️');
    expect(telegram.reactions.map(({ chatId, messageId, emoji }) => ({ chatId, messageId, emoji }))).toEqual([
      { chatId: 4242, messageId: Number(first!.messageId), emoji: '👍' },
      { chatId: 4242, messageId: Number(second!.messageId), emoji: '❤' },
    ]);
  });

  it('sends a part whose quoted message is gone without the quote, instead of losing it', async () => {
    const { telegram, channel, context } = await started();
    telegram.sendText({ chatId: 77, text: 'hi' });
    const [message] = await context.waitForMessages(1);
    await channel.send(targetOf('77', 77, [message!.messageId!]), 'Hi there', { deliveryKey: 'd', replyTo: '999999' });
    expect(telegram.sentTo(77)).toEqual([expect.objectContaining({ text: 'Hi there', replyToMessageId: undefined })]);
  });

  it('refuses a reaction Telegram refuses with a ChannelError, and does not ask Telegram for an emoji outside its list', async () => {
    const { telegram, channel, context } = await started();
    telegram.sendText({ chatId: 55, text: 'hello' });
    const [message] = await context.waitForMessages(1);
    const target = targetOf('55', 55, [message!.messageId!]);

    const invented = channel.react(target, '123456', '👍');
    await expect(invented).rejects.toBeInstanceOf(ChannelError);
    await expect(invented).rejects.toMatchObject({ code: 'reaction_refused', message: expect.stringContaining('message to react not found') });
    await expect(channel.react(target, message!.messageId!, '🍕')).rejects.toMatchObject({ code: 'reaction_refused' });
    await expect(channel.react(target, 'not-an-id', '👍')).rejects.toMatchObject({ code: 'reaction_refused' });
    expect(telegram.callsOf('setMessageReaction')).toHaveLength(1);
    expect(telegram.reactions).toEqual([]);
  });

  it('in a group, a part quotes the message it names instead of the one it answers', async () => {
    const { telegram, channel, context } = await started();
    telegram.sendGroupText({ chatId: -1009, from: { id: 601, first_name: 'Alice' }, text: 'is the pool open?', mention: true });
    telegram.sendGroupText({ chatId: -1009, from: { id: 601, first_name: 'Alice' }, text: 'and the sauna?', mention: true });
    const [pool, sauna] = await context.waitForMessages(2);
    const target = targetOf('-1009', 601, [pool!.messageId!, sauna!.messageId!]);
    await channel.send(target, 'The pool is open till 10.', { deliveryKey: 'a', replyTo: pool!.messageId! });
    await channel.send(target, 'The sauna too.', { deliveryKey: 'b' });
    expect(telegram.sentTo(-1009).map((message) => message.replyToMessageId)).toEqual([Number(pool!.messageId), undefined]);
  });

  it('in a business chat, types and quotes through the connection, and skips a reaction with one log line', async () => {
    const { telegram, channel, context, logs } = await started();
    telegram.businessConnection({ id: 'bc-9', owner: { id: 900, first_name: 'Olga' }, rights: { can_reply: true, can_read_messages: true } });
    telegram.businessMessage({ chatId: 333, from: { id: 333, first_name: 'Carl' }, connectionId: 'bc-9', text: 'any rooms?' });
    const [message] = await context.waitForMessages(1);
    const target = targetOf(conversationIdOf({ chatId: 333, businessConnectionId: 'bc-9' }), 333, [message!.messageId!]);

    await channel.typing(target);
    await channel.send(target, 'Let me check.', { deliveryKey: 'x', replyTo: message!.messageId! });
    await channel.react(target, message!.messageId!, '👍');
    await channel.react(target, message!.messageId!, '👀');
    expect(telegram.callsOf('sendChatAction').at(-1)!.params).toMatchObject({ chat_id: 333, business_connection_id: 'bc-9' });
    expect(telegram.sentTo(333)).toEqual([
      expect.objectContaining({ text: 'Let me check.', businessConnectionId: 'bc-9', replyToMessageId: Number(message!.messageId) }),
    ]);
    expect(telegram.callsOf('setMessageReaction')).toHaveLength(0);
    expect(logs.filter((line) => String(line['msg']).includes('reaction in a Telegram Business chat was skipped'))).toHaveLength(1);
  });
});
