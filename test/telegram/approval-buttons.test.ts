import { afterEach, describe, expect, it } from 'vitest';
import { conversationIdOf } from '../../src/channels/telegram-bot/address.js';
import { TelegramBotChannel } from '../../src/channels/telegram-bot/index.js';
import type { ReplyTarget } from '../../src/domain/ports/channel.js';
import { systemText } from '../../src/i18n/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { startFakeTelegram, type FakeSentMessage, type FakeTelegram, type FakeUpdate } from '../../src/testing/index.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';

// Tool-call approvals on the Telegram bot, channel level: the question's Approve / Decline buttons, and what a press
// does, through grammY against the fake Bot API (which checks callback data and edits as Telegram does).
const SECRET = 'approval-webhook-secret_0123456789';
const APPROVAL = { id: '5f0c1a52-7d0e-4c11-9a57-3f7f2a9b8c01', expiresAt: '2030-01-01T00:00:00.000Z' };
const QUESTION = 'Before I go on, I need your yes:\nCancel **the 14:00 appointment**';

let telegram: FakeTelegram | undefined;
let channel: TelegramBotChannel | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await channel?.stop();
  await server?.close();
  await telegram?.close();
  channel = undefined;
  server = undefined;
  telegram = undefined;
});

async function started(mode: 'polling' | 'webhook' = 'polling'): Promise<{ telegram: FakeTelegram; channel: TelegramBotChannel; context: FakeChannelContext }> {
  telegram = await startFakeTelegram();
  channel = new TelegramBotChannel({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    mode,
    webhookSecret: SECRET,
    drafts: false,
    pollTimeoutSeconds: 1,
    logger: silentLogger(),
  });
  if (mode === 'webhook')
    server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), { host: '127.0.0.1', port: 0 });
  const context = new FakeChannelContext();
  await channel.start(context);
  return { telegram, channel, context };
}

function targetOf(conversationId: string, accountId: number, inReplyTo: readonly string[]): ReplyTarget {
  return { channel: 'telegram-bot', conversationId, accountId: String(accountId), inReplyTo, correlationId: 'corr-1', sessionId: 's' };
}

/** The question part of a reply, sent as the pipeline sends it; resolves with the message the chat received. */
async function ask(target: ReplyTarget, chatId: number): Promise<FakeSentMessage> {
  await channel!.send(target, QUESTION, { deliveryKey: 'd-question', approval: APPROVAL });
  return telegram!.sentTo(chatId).at(-1)!;
}

/** The bot's answer to one press (answerCallbackQuery), once it was made. */
async function answerTo(press: FakeUpdate): Promise<Record<string, unknown>> {
  const id = (press['callback_query'] as { id: string }).id;
  const call = await telegram!.waitForCall('answerCallbackQuery', (c) => c.params['callback_query_id'] === id);
  return call.params;
}

const approveData = `apv:${APPROVAL.id}:a`;
const declineData = `apv:${APPROVAL.id}:d`;

describe('telegram bot: approval buttons', () => {
  it('shows Approve / Decline under a question; the asked person approves, is told so, and the question shows it without buttons', async () => {
    const { telegram, channel, context } = await started();
    expect(channel.capabilities.approvalButtons).toBe(true);
    telegram.sendText({ chatId: 1001, text: 'cancel my appointment' });
    const [message] = await context.waitForMessages(1);
    const question = await ask(targetOf(conversationIdOf({ chatId: 1001 }), 1001, [message!.messageId!]), 1001);

    expect(question.text).toBe('Before I go on, I need your yes:\nCancel the 14:00 appointment');
    expect(question.replyMarkup).toEqual({
      inline_keyboard: [
        [
          { text: 'Approve', callback_data: approveData },
          { text: 'Decline', callback_data: declineData },
        ],
      ],
    });
    // An ordinary part gets no buttons.
    await channel.send(targetOf(conversationIdOf({ chatId: 1001 }), 1001, []), 'Anything else?', { deliveryKey: 'd-plain' });
    expect(telegram.sentTo(1001).at(-1)!.replyMarkup).toBeUndefined();

    const press = telegram.pressButton({ message: question, data: approveData });
    expect(await answerTo(press)).toEqual({ callback_query_id: expect.any(String), text: '✅ Approved' });
    expect(context.decisions).toEqual([{ accountId: '1001', approvalId: APPROVAL.id, decision: 'approved' }]);
    await expect.poll(() => telegram.edits.length).toBe(1);
    const [edit] = telegram.edits;
    expect(edit).toMatchObject({ chatId: 1001, messageId: question.messageId, text: `${question.text}\n\n✅ Approved`, replyMarkup: undefined });
    // The question's formatting stays (bold is where it was).
    expect(edit!.entities).toEqual(question.entities);
    // Polling asks Telegram for button presses.
    expect(telegram.callsOf('getUpdates').at(-1)!.params['allowed_updates']).toContain('callback_query');
  });

  it('tells the presser in their language, and shows an expired question as expired', async () => {
    const { telegram, context } = await started();
    const question = await ask(targetOf(conversationIdOf({ chatId: 1002 }), 1002, []), 1002);
    context.approvalOutcome = { kind: 'expired' };
    const press = telegram.pressButton({ message: question, data: declineData, from: { id: 1002, first_name: 'Ира', language_code: 'ru' } });
    expect((await answerTo(press))['text']).toBe(systemText('ru', 'approval.expired'));
    expect(context.decisions).toEqual([{ accountId: '1002', approvalId: APPROVAL.id, decision: 'declined' }]);
    await expect.poll(() => telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n${systemText('ru', 'approval.expired')}`]);
  });

  it('in a group, refuses another member with an alert (decided for the presser, not anyone the data names), then the sender decides', async () => {
    const { telegram, context } = await started();
    const asker = { id: 5001, first_name: 'Ann', language_code: 'en' };
    const other = { id: 5002, first_name: 'Bob', language_code: 'en' };
    telegram.sendGroupText({ chatId: -100777, text: 'cancel my appointment', mention: true, from: asker });
    const [message] = await context.waitForMessages(1);
    expect(message!.accountId).toBe('5001');
    const question = await ask(targetOf(conversationIdOf({ chatId: -100777 }), 5001, [message!.messageId!]), -100777);
    expect(question.replyMarkup?.inline_keyboard[0]?.map((button) => button.callback_data)).toEqual([approveData, declineData]);

    context.approvalOutcome = { kind: 'refused', reason: 'not_yours' };
    const refused = telegram.pressButton({ message: question, data: approveData, from: other });
    expect(await answerTo(refused)).toMatchObject({ text: systemText('en', 'approval.notYours'), show_alert: true });
    expect(context.decisions).toEqual([{ accountId: '5002', approvalId: APPROVAL.id, decision: 'approved' }]);

    context.approvalOutcome = { kind: 'decided', status: 'declined' };
    const decided = telegram.pressButton({ message: question, data: declineData, from: asker });
    expect((await answerTo(decided))['text']).toBe('❌ Declined');
    expect(context.decisions.map((d) => d.accountId)).toEqual(['5002', '5001']);
    await expect.poll(() => telegram.edits.length).toBe(1);
    // Only the sender's press changed the question.
    expect(telegram.edits[0]).toMatchObject({ chatId: -100777, text: `${question.text}\n\n❌ Declined`, replyMarkup: undefined });
  });

  it('answers forged or malformed button data as unknown and changes nothing', async () => {
    const { telegram, context } = await started();
    const question = await ask(targetOf(conversationIdOf({ chatId: 1003 }), 1003, []), 1003);
    const forged = ['apv:', 'apv:../../x:a', `apv:${APPROVAL.id}:x`, `apv:${APPROVAL.id}:a:5002`, `apv:${APPROVAL.id}`, 'apv:a b:a'];
    for (const data of forged) {
      const press = telegram.pressButton({ message: question, data });
      expect(await answerTo(press)).toMatchObject({ text: systemText('en', 'approval.unknown') });
    }
    expect(context.decisions).toEqual([]);
    // A well-formed id nobody asked: the core finds nothing, and nothing is edited.
    context.approvalOutcome = { kind: 'not_found' };
    const unknown = telegram.pressButton({ message: question, data: 'apv:00000000-0000-4000-8000-000000000000:a' });
    expect((await answerTo(unknown))['text']).toBe(systemText('en', 'approval.unknown'));
    // A press whose presser is not a well-formed user is never handled (kept as a dead letter).
    const shapeless = telegram.enqueue({
      callback_query: { id: 'cbq-bad', from: { id: 'x', is_bot: false, first_name: 'X' }, chat_instance: 'i', data: approveData },
    });
    await expect.poll(() => context.state.get(`dead-letter:${shapeless.update_id}`)).toBeDefined();
    // Then a real press: the same chat's presses are handled in order, so everything before it has ended.
    context.approvalOutcome = { kind: 'decided', status: 'approved' };
    await answerTo(telegram.pressButton({ message: question, data: approveData }));
    await expect.poll(() => telegram.edits.length).toBe(1);
    expect(context.decisions.map((d) => d.approvalId)).toEqual(['00000000-0000-4000-8000-000000000000', APPROVAL.id]);
    expect(telegram.callsOf('answerCallbackQuery').some((call) => call.params['callback_query_id'] === 'cbq-bad')).toBe(false);
  });

  it('shows a decision taken before (another process, an operator) on the question when pressed again', async () => {
    const { telegram, context } = await started();
    const question = await ask(targetOf(conversationIdOf({ chatId: 1004 }), 1004, []), 1004);
    context.approvalOutcome = { kind: 'already', status: 'approved' };
    const press = telegram.pressButton({ message: question, data: declineData });
    expect((await answerTo(press))['text']).toBe(systemText('en', 'approval.alreadyDecided'));
    await expect.poll(() => telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n✅ Approved`]);
  });

  it('handles a press posted to the webhook', async () => {
    const { telegram, context } = await started('webhook');
    const question = await ask(targetOf(conversationIdOf({ chatId: 1005 }), 1005, []), 1005);
    const press = telegram.pressButton({ message: question, data: approveData });
    const response = await fetch(`${server!.url}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET },
      body: JSON.stringify(press),
    });
    expect(response.status).toBe(200);
    // 200 comes once the press was handled: decided, answered and edited.
    expect(context.decisions).toEqual([{ accountId: '1005', approvalId: APPROVAL.id, decision: 'approved' }]);
    expect((await answerTo(press))['text']).toBe('✅ Approved');
    expect(telegram.edits).toMatchObject([{ chatId: 1005, text: `${question.text}\n\n✅ Approved`, replyMarkup: undefined }]);
  });

  it('puts buttons on a question in a Telegram Business chat and edits it through the connection', async () => {
    const { telegram, context } = await started();
    telegram.businessConnection({ id: 'bc-1', owner: { id: 900, first_name: 'Owner' } });
    telegram.businessMessage({ chatId: 1500, text: 'cancel my appointment', connectionId: 'bc-1' });
    const [message] = await context.waitForMessages(1);
    expect(message!.conversationId).toBe('business:bc-1:1500');
    const question = await ask(targetOf(message!.conversationId, 1500, [message!.messageId!]), 1500);
    expect(question).toMatchObject({
      businessConnectionId: 'bc-1',
      replyMarkup: { inline_keyboard: [[{ callback_data: approveData }, { callback_data: declineData }]] },
    });

    const press = telegram.pressButton({ message: question, data: approveData });
    expect((await answerTo(press))['text']).toBe('✅ Approved');
    expect(context.decisions).toEqual([{ accountId: '1500', approvalId: APPROVAL.id, decision: 'approved' }]);
    await expect.poll(() => telegram.edits.length).toBe(1);
    expect(telegram.edits[0]).toMatchObject({ businessConnectionId: 'bc-1', text: `${question.text}\n\n✅ Approved`, replyMarkup: undefined });
    expect(telegram.callsOf('editMessageText')[0]!.params['business_connection_id']).toBe('bc-1');
  });
});
