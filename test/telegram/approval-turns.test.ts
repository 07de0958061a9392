import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { ToolApproval } from '../../src/domain/approval.js';
import { systemText } from '../../src/i18n/index.js';
import type { FakeSentMessage, FakeTelegram, FakeUpdate } from '../../src/testing/index.js';
import type { defineTool } from '../../src/tools/define-tool.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { createTelegramRig, waitUntilSettled, type TelegramRig } from './telegram-support.js';
import { cancellableSalon, cancellingModel } from '../support/approval-tools.js';

// Tool-call approvals end to end on the Telegram bot: a real Palaver (SQLite file, scripted model over HTTP, a local
// tool that needs the person's yes) and the bot channel polling the fake Bot API through grammY. The person presses
// the question's buttons as Telegram delivers them (callback_query), and sees what they would see: the question, its
// edit, the bot's answer to the press and the model's answer.

let rig: TelegramRig | undefined;
let database: TestPostgresDatabase | undefined;
afterEach(async () => {
  await rig?.close();
  await database?.drop();
  rig = database = undefined;
});

async function startRig(tools: readonly ReturnType<typeof defineTool>[], options: { now?: () => Date; config?: Record<string, unknown> } = {}) {
  rig = await createTelegramRig(
    cancellingModel,
    { quietWindowMs: 100 },
    { config: options.config ?? {}, palaver: { tools, ...(options.now ? { now: options.now } : {}) } },
  );
  return rig;
}

/** The question the chat received: the message with buttons. */
async function questionIn(telegram: FakeTelegram, chatId: number): Promise<FakeSentMessage> {
  await expect.poll(() => telegram.sentTo(chatId).filter((message) => message.replyMarkup !== undefined).length).toBe(1);
  return telegram.sentTo(chatId).find((message) => message.replyMarkup !== undefined)!;
}

/** The bot's answer to one press (answerCallbackQuery), once it was made. */
async function answerTo(telegram: FakeTelegram, press: FakeUpdate): Promise<Record<string, unknown>> {
  const id = (press['callback_query'] as { id: string }).id;
  return (await telegram.waitForCall('answerCallbackQuery', (call) => call.params['callback_query_id'] === id)).params;
}

/** The one approval request stored for a chat's conversation. */
async function requestOf(palaver: Palaver, chatId: number): Promise<ToolApproval> {
  const session = await palaver.store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(chatId));
  if (!session) throw new Error(`no session for chat ${chatId}`);
  const [approval, ...more] = (await palaver.store.approvals.list({ limit: 50 })).filter((item) => item.sessionId === session.id);
  if (!approval || more.length > 0) throw new Error(`expected one approval request for chat ${chatId}`);
  return approval;
}

const data = (approval: ToolApproval, decision: 'a' | 'd') => `apv:${approval.id}:${decision}`;

describe('telegram bot: a tool call that needs the person’s yes, end to end', () => {
  it('asks with buttons and runs nothing; Approve runs the tool once, edits the question and the model answers with its result; a replayed press changes nothing', async () => {
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness, palaver } = await startRig([cancel]);
    telegram.sendText({ chatId: 701, text: 'cancel my appointment please' });
    const question = await questionIn(telegram, 701);
    expect(question.text).toContain('Cancel appointment a-17');
    expect(question.replyMarkup?.inline_keyboard[0]?.map((button) => button.text)).toEqual(['Approve', 'Decline']);
    expect(runs).toEqual([]);
    expect(harness.model.calls).toHaveLength(1);
    const approval = await requestOf(palaver, 701);
    expect(approval).toMatchObject({ status: 'pending', tool: 'cancel_appointment', accountId: '701', summary: 'Cancel appointment a-17' });
    expect(question.replyMarkup?.inline_keyboard[0]?.map((button) => button.callback_data)).toEqual([data(approval, 'a'), data(approval, 'd')]);
    // Only the question reached the chat: the model's words beside the call are not sent.
    expect(telegram.sentTo(701)).toHaveLength(1);

    const press = telegram.pressButton({ message: question, data: data(approval, 'a') });
    expect(await answerTo(telegram, press)).toMatchObject({ text: '✅ Approved' });
    const [answer] = await telegram.waitForMessages(2, { chatId: 701 }).then((sent) => sent.slice(1));
    expect(answer!.text).toBe('Done: Appointment a-17 cancelled.');
    expect(runs).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(2);
    await expect
      .poll(() => telegram.edits.map((edit) => [edit.chatId, edit.messageId, edit.text, edit.replyMarkup]))
      .toEqual([[701, question.messageId, `${question.text}\n\n✅ Approved`, undefined]]);
    expect((await palaver.store.approvals.get(approval.id))?.status).toBe('approved');

    // The same press again (Telegram redelivers, or the person taps a stale copy): told it was decided, nothing runs.
    const replayed = telegram.pressButton({ message: question, data: data(approval, 'a') });
    expect(await answerTo(telegram, replayed)).toMatchObject({ text: systemText('en', 'approval.alreadyDecided') });
    const declineLate = telegram.pressButton({ message: question, data: data(approval, 'd') });
    expect(await answerTo(telegram, declineLate)).toMatchObject({ text: systemText('en', 'approval.alreadyDecided') });
    // Settled: the person's message and the press's record of the decision, nothing queued or unsent.
    await waitUntilSettled(harness, 2);
    expect(runs).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(2);
    expect(telegram.sentTo(701)).toHaveLength(2);
    expect((await palaver.store.approvals.get(approval.id))?.status).toBe('approved');
  });

  it('Decline never runs the tool: the model is told it was declined and its answer is sent', async () => {
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness, palaver } = await startRig([cancel]);
    telegram.sendText({ chatId: 702, text: 'cancel it' });
    const question = await questionIn(telegram, 702);
    const approval = await requestOf(palaver, 702);
    const press = telegram.pressButton({ message: question, data: data(approval, 'd') });
    expect(await answerTo(telegram, press)).toMatchObject({ text: '❌ Declined' });
    const [, answer] = await telegram.waitForMessages(2, { chatId: 702 });
    expect(answer!.text).toContain('Declined by the person');
    await expect.poll(() => telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n❌ Declined`]);
    await waitUntilSettled(harness, 2);
    expect(runs).toEqual([]);
    expect(harness.model.calls).toHaveLength(2);
    expect((await palaver.store.approvals.get(approval.id))?.status).toBe('declined');
  });

  it('in a group, only the member whose message led to the question decides: another member is refused with an alert', async () => {
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness, palaver } = await startRig([cancel]);
    const ann = { id: 5101, first_name: 'Ann', language_code: 'en' };
    const bob = { id: 5102, first_name: 'Bob', language_code: 'en' };
    telegram.sendGroupText({ chatId: -100901, text: 'cancel my appointment', mention: true, from: ann });
    const question = await questionIn(telegram, -100901);
    const approval = await requestOf(palaver, -100901);
    expect(approval.accountId).toBe('5101');

    const refused = telegram.pressButton({ message: question, data: data(approval, 'a'), from: bob });
    expect(await answerTo(telegram, refused)).toMatchObject({ text: systemText('en', 'approval.notYours'), show_alert: true });
    expect(runs).toEqual([]);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.edits).toEqual([]);
    expect((await palaver.store.approvals.get(approval.id))?.status).toBe('pending');

    const approved = telegram.pressButton({ message: question, data: data(approval, 'a'), from: ann });
    expect(await answerTo(telegram, approved)).toMatchObject({ text: '✅ Approved' });
    const [, answer] = await telegram.waitForMessages(2, { chatId: -100901 });
    expect(answer!.text).toBe('Done: Appointment a-17 cancelled.');
    await waitUntilSettled(harness, 2);
    expect(runs).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(2);
    expect(telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n✅ Approved`]);
  });

  it('a forged press (a real request id from another account, or an id nobody asked) changes nothing', async () => {
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness, palaver } = await startRig([cancel]);
    telegram.sendText({ chatId: 703, text: 'cancel it' });
    const question = await questionIn(telegram, 703);
    const approval = await requestOf(palaver, 703);
    // Another Telegram account sends the button's data for this chat's question (a bot client can send any data).
    const stranger = { id: 9999, first_name: 'Mallory', language_code: 'en' };
    for (const decision of ['a', 'd'] as const) {
      const forged = telegram.pressButton({ message: question, data: data(approval, decision), from: stranger });
      expect(await answerTo(telegram, forged)).toMatchObject({ text: systemText('en', 'approval.notYours'), show_alert: true });
    }
    // The person's own account, with a well-formed id that was never asked.
    const madeUp = telegram.pressButton({ message: question, data: 'apv:00000000-0000-4000-8000-000000000000:a' });
    expect(await answerTo(telegram, madeUp)).toMatchObject({ text: systemText('en', 'approval.unknown') });
    expect(runs).toEqual([]);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.edits).toEqual([]);
    expect(telegram.sentTo(703)).toHaveLength(1);
    expect(telegram.sentTo(9999)).toEqual([]);
    expect(await palaver.store.approvals.get(approval.id)).toMatchObject({ status: 'pending', decidedBy: null });
    // The request is still the person's to decide.
    const press = telegram.pressButton({ message: question, data: data(approval, 'a') });
    expect(await answerTo(telegram, press)).toMatchObject({ text: '✅ Approved' });
    await telegram.waitForMessages(2, { chatId: 703 });
    expect(runs).toHaveLength(1);
  });

  it('two processes on one database deciding the same request at once: one decides, the other is told it was decided; the tool runs once and one answer is sent', async () => {
    // PostgreSQL, so the two decisions really overlap: two Palavers in one Node process on one SQLite file cannot
    // race (a write transaction of one holds SQLite's lock across an await while the other's BEGIN IMMEDIATE blocks
    // the shared event loop until busy_timeout; separate OS processes simply wait). The SQLite file case follows.
    database = await createTestPostgresDatabase();
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness } = await startRig([cancel], { config: { database: { url: database.url } } });
    const first = rig!.palaver;
    const second = await rig!.start();
    const chats = [711, 712, 713];
    for (const chatId of chats) telegram.sendText({ chatId, text: `cancel my appointment (${chatId})` });
    const questions = await Promise.all(chats.map((chatId) => questionIn(telegram, chatId)));
    expect(harness.model.calls).toHaveLength(chats.length);
    for (const [index, chatId] of chats.entries()) {
      const approval = await requestOf(first, chatId);
      // The person's yes reaches both processes at the same moment (e.g. a press handled by one, the web or a
      // redelivery by the other), each deciding for the account its channel verified.
      const person = { kind: 'person', channel: TELEGRAM_BOT_CHANNEL, accountId: String(chatId) } as const;
      const outcomes = await Promise.all([first.approvals.decide(approval.id, 'approved', person), second.approvals.decide(approval.id, 'approved', person)]);
      expect(outcomes).toHaveLength(2);
      expect(outcomes).toContainEqual({ kind: 'decided', status: 'approved' });
      expect(outcomes).toContainEqual({ kind: 'already', status: 'approved' });
      const [, answer] = await telegram.waitForMessages(2, { chatId });
      expect(answer!.text).toBe('Done: Appointment a-17 cancelled.');
      // A press on the question afterwards, handled by whichever process polls: already decided, the question shows it.
      const press = telegram.pressButton({ message: questions[index]!, data: data(approval, 'a') });
      expect(await answerTo(telegram, press)).toMatchObject({ text: systemText('en', 'approval.alreadyDecided') });
    }
    await expect.poll(() => telegram.edits.filter((edit) => edit.text?.endsWith('✅ Approved')).length).toBe(chats.length);
    await expect.poll(() => harness.model.calls.length).toBe(chats.length * 2);
    await expect
      .poll(async () => (await first.store.approvals.list({ limit: 10 })).map((approval) => approval.status))
      .toEqual(['approved', 'approved', 'approved']);
    expect(runs).toHaveLength(chats.length);
    expect(new Set(runs).size).toBe(chats.length);
    for (const chatId of chats) expect(telegram.sentTo(chatId)).toHaveLength(2);
    const audit = (await first.store.adminActions.list({ limit: 20 })).filter((action) => action.action === 'approval');
    expect(audit).toHaveLength(chats.length);
  });

  it('two processes on one SQLite file: the process standing by decides the question the poller asked; the poller’s later decision and press are told it was decided', async () => {
    const { runs, cancel } = cancellableSalon();
    const { telegram, harness } = await startRig([cancel]);
    const poller = rig!.palaver;
    const standingBy = await rig!.start();
    telegram.sendText({ chatId: 721, text: 'cancel my appointment' });
    const question = await questionIn(telegram, 721);
    const approval = await requestOf(poller, 721);
    const person = { kind: 'person', channel: TELEGRAM_BOT_CHANNEL, accountId: '721' } as const;
    expect(await standingBy.approvals.decide(approval.id, 'approved', person)).toEqual({ kind: 'decided', status: 'approved' });
    expect(await poller.approvals.decide(approval.id, 'declined', person)).toEqual({ kind: 'already', status: 'approved' });
    const press = telegram.pressButton({ message: question, data: data(approval, 'd') });
    expect(await answerTo(telegram, press)).toMatchObject({ text: systemText('en', 'approval.alreadyDecided') });
    const [, answer] = await telegram.waitForMessages(2, { chatId: 721 });
    expect(answer!.text).toBe('Done: Appointment a-17 cancelled.');
    await waitUntilSettled(harness, 2);
    expect(runs).toHaveLength(1);
    expect(harness.model.calls).toHaveLength(2);
    expect(telegram.sentTo(721)).toHaveLength(2);
    expect(telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n✅ Approved`]);
  });

  it('declines when nobody answers in time: the tool never runs, the model answers, and a later press is told it expired', async () => {
    const { runs, cancel } = cancellableSalon();
    let skew = 0;
    const { telegram, harness, palaver } = await startRig([cancel], {
      now: () => new Date(Date.now() + skew),
      config: { tools: { approvalTimeoutMinutes: 5 } },
    });
    telegram.sendText({ chatId: 704, text: 'cancel it' });
    const question = await questionIn(telegram, 704);
    const approval = await requestOf(palaver, 704);
    expect(approval.expiresAt.getTime() - approval.requestedAt.getTime()).toBe(5 * 60_000);
    expect(await palaver.approvals.expireDue()).toBe(0);

    skew = 5 * 60_000 + 1_000;
    expect(await palaver.approvals.expireDue()).toBe(1);
    const [, answer] = await telegram.waitForMessages(2, { chatId: 704 });
    expect(answer!.text).toContain('Not approved in time');
    expect(await palaver.store.approvals.get(approval.id)).toMatchObject({ status: 'expired', decidedBy: 'expiry' });
    // Nobody pressed: the question still has its buttons (docs/approvals.md says so) until a press settles it.
    expect(telegram.edits).toEqual([]);

    const late = telegram.pressButton({ message: question, data: data(approval, 'a') });
    expect(await answerTo(telegram, late)).toMatchObject({ text: systemText('en', 'approval.expired') });
    await expect.poll(() => telegram.edits.map((edit) => edit.text)).toEqual([`${question.text}\n\n${systemText('en', 'approval.expired')}`]);
    await waitUntilSettled(harness, 2);
    expect(runs).toEqual([]);
    expect(harness.model.calls).toHaveLength(2);
    expect(telegram.sentTo(704)).toHaveLength(2);
  });
});
