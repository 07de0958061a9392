import { afterEach, describe, expect, it } from 'vitest';
import type { Message, UserFromGetMe } from 'grammy/types';
import { readMessage } from '../../src/channels/telegram-bot/inbound.js';
import { createTelegramRig, userTexts, waitUntilSettled, type TelegramRig } from './telegram-support.js';

let rig: TelegramRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** A reply's text without the sender label the echoed group message carried. */
const unlabelled = (text: string) => text.replace(/\[from "[^"]*" #[0-9a-f]{6}\] /, '');
const echo = (call: Parameters<Parameters<typeof createTelegramRig>[0]>[0]) => ({ text: `seen: ${userTexts(call).at(-1)}` });

describe('telegram bot: what it understands', () => {
  it('describes media by type with their captions, and gives the model the text a reply quotes', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    telegram.sendPhoto({ chatId: 20, caption: 'my new kitchen' });
    await telegram.waitForMessages(1, { chatId: 20 });
    telegram.sendSticker({ chatId: 20, emoji: '🎉' });
    await telegram.waitForMessages(2, { chatId: 20 });
    telegram.sendText({ chatId: 20, text: 'what did you mean?', replyTo: { messageId: 100_000, text: 'Shall I book\nthe 7 pm slot?' } });
    await telegram.waitForMessages(3, { chatId: 20 });
    expect(harness.model.calls.map((call) => userTexts(call).at(-1))).toEqual([
      '[photo] my new kitchen',
      '[sticker 🎉]',
      '> Shall I book\n> the 7 pm slot?\n\nwhat did you mean?',
    ]);
  });

  it('does not answer a redelivered update again', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    const original = telegram.sendText({ chatId: 21, text: 'only once, please' });
    await telegram.waitForMessages(1, { chatId: 21 });
    // The same message delivered again (as after a lost acknowledgement), under a new update id.
    telegram.enqueue({ message: original['message'] });
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > telegram.updates.at(-1)!.update_id);
    await waitUntilSettled(harness, 1);
    expect(harness.model.calls).toHaveLength(1);
    expect(telegram.sentTo(21)).toHaveLength(1);
  });

  it('in a group, answers only a message that mentions or replies to the bot, in a shared conversation per chat and topic', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    const alice = { id: 601, first_name: 'Alice' };
    const bob = { id: 602, first_name: 'Bob' };
    telegram.sendGroupText({ chatId: -1001, from: alice, text: 'lunch anyone?' });
    const asked = telegram.sendGroupText({ chatId: -1001, from: bob, text: 'what is on the menu?', mention: true });
    const [reply] = await telegram.waitForMessages(1, { chatId: -1001 });
    await waitUntilSettled(harness, 1);
    expect(harness.model.calls).toHaveLength(1);
    // A group's messages reach the model labelled with their sender.
    expect(userTexts(harness.model.calls[0]!)).toEqual([expect.stringMatching(/^\[from "Bob" #[0-9a-f]{6}\] what is on the menu\?$/)]);
    // The reply quotes whom it answers.
    expect(reply!.replyToMessageId).toBe((asked['message'] as { message_id: number }).message_id);

    // A reply to the bot's message counts as addressed; Alice joins the same shared conversation.
    telegram.sendGroupText({ chatId: -1001, from: alice, text: 'and for dessert?', replyTo: { messageId: reply!.messageId, text: reply!.text } });
    await telegram.waitForMessages(2, { chatId: -1001 });
    expect(userTexts(harness.model.calls[1]!).at(-1)).toMatch(/^\[from "Alice" #[0-9a-f]{6}\] [\s\S]*and for dessert\?$/);

    // Forum topics are conversations of their own, answered in their topic.
    telegram.sendGroupText({ chatId: -1002, from: bob, threadId: 11, text: 'topic eleven', mention: true });
    telegram.sendGroupText({ chatId: -1002, from: bob, threadId: 12, text: 'topic twelve', mention: true });
    const topics = await telegram.waitForMessages(2, { chatId: -1002 });
    expect(Object.fromEntries(topics.map((m) => [m.threadId, unlabelled(m.text)]))).toEqual({ 11: 'seen: topic eleven', 12: 'seen: topic twelve' });
  });

  it('never answers a group message without a mention in mention mode, and every one in all mode', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    telegram.sendGroupText({ chatId: -2001, text: 'just chatting among ourselves' });
    telegram.sendGroupText({ chatId: -2001, text: '/reset@some_other_bot' });
    // Both updates are acknowledged, so both were handled: neither was stored, so no turn can start.
    await telegram.waitForCall('getUpdates', (call) => Number(call.params['offset']) > telegram.updates.at(-1)!.update_id);
    await waitUntilSettled(harness, 0);
    expect(harness.model.calls).toHaveLength(0);
    expect(telegram.sentTo(-2001)).toHaveLength(0);

    await rig.palaver.close();
    await rig.start({ groups: { answer: 'all' } });
    telegram.sendGroupText({ chatId: -2001, text: 'anyone there?' });
    const [reply] = await telegram.waitForMessages(1, { chatId: -2001 });
    expect(unlabelled(reply!.text)).toBe('seen: anyone there?');
  });

  it('greets on /start and starts afresh on /reset, confirming it', async () => {
    rig = await createTelegramRig((call) => ({ text: `history: ${userTexts(call).join(' | ')}` }), { quietWindowMs: 50 });
    const { telegram } = rig;
    telegram.sendText({ chatId: 30, text: '/start', from: { id: 30, first_name: 'Ivan', language_code: 'ru' } });
    const [greeting] = await telegram.waitForMessages(1, { chatId: 30 });
    expect(greeting!.text).toMatch(/^Здравствуйте!/);
    telegram.sendText({ chatId: 30, text: 'my name is Ivan' });
    await telegram.waitForMessages(2, { chatId: 30 });
    telegram.sendText({ chatId: 30, text: '/reset' });
    const confirmation = (await telegram.waitForMessages(3, { chatId: 30 }))[2]!;
    expect(confirmation.text).toMatch(/^Done: we start afresh/);
    telegram.sendText({ chatId: 30, text: 'who am I?' });
    const after = (await telegram.waitForMessages(4, { chatId: 30 }))[3]!;
    expect(after.text).toBe('history: who am I?');
  });

  it("confirms /reset in the interface language of the person's profile, not the Telegram app's", async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, palaver } = rig;
    const from = { id: 32, first_name: 'Olena', language_code: 'en' };
    telegram.sendText({ chatId: 32, text: 'hello', from });
    await telegram.waitForMessages(1, { chatId: 32 });
    const user = (await palaver.store.users.findByAccount('telegram', '32'))!;
    expect((await palaver.profiles.update(user.id, { preferences: { interfaceLanguage: 'uk' } })).ok).toBe(true);
    telegram.sendText({ chatId: 32, text: '/reset', from });
    const confirmation = (await telegram.waitForMessages(2, { chatId: 32 }))[1]!;
    expect(confirmation.text).toBe('Готово: починаємо заново. Попередніх повідомлень я більше не бачу.');
  });

  it('tells the person, in their language, when a message is too long', async () => {
    rig = await createTelegramRig(echo, { quietWindowMs: 50 });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 31, text: 'x'.repeat(17_000), from: { id: 31, first_name: 'Olena', language_code: 'uk' } });
    const [notice] = await telegram.waitForMessages(1, { chatId: 31 });
    expect(notice!.text).toMatch(/^Вибачте, це повідомлення задовге/);
    expect(harness.model.calls).toHaveLength(0);
  });
});

describe('readMessage', () => {
  const bot: UserFromGetMe = {
    id: 1,
    is_bot: true,
    first_name: 'Bot',
    username: 'palaver_test_bot',
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: true,
    has_main_web_app: false,
  } as UserFromGetMe;
  const base = {
    message_id: 5,
    date: 0,
    chat: { id: 9, type: 'private', first_name: 'A' },
    from: { id: 9, is_bot: false, first_name: 'A' },
  } as unknown as Message;

  it("hands on the phone of the sender's own contact only", () => {
    expect(readMessage({ ...base, contact: { phone_number: '+491701234567', first_name: 'A', user_id: 9 } } as Message, bot)).toEqual({
      text: '[contact: A, +491701234567]',
      phone: '+491701234567',
    });
    expect(readMessage({ ...base, contact: { phone_number: '+441234', first_name: 'Friend', user_id: 77 } } as Message, bot)).toEqual({
      text: '[contact: Friend, +441234]',
    });
  });

  it("takes the bot's mention out of a group message and ignores service messages", () => {
    expect(readMessage({ ...base, text: '@palaver_test_bot  what now?', entities: [{ type: 'mention', offset: 0, length: 17 }] } as Message, bot)?.text).toBe(
      'what now?',
    );
    expect(readMessage({ ...base, new_chat_members: [] } as unknown as Message, bot)).toBeUndefined();
  });
});
