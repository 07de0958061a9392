import { afterEach, describe, expect, it } from 'vitest';
import { MemoryChannel, type Said } from '../../src/channels/memory/memory-channel.js';
import type { ChannelContext } from '../../src/domain/ports/channel.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { startDirectoryServer, type DirectoryServer } from './directory-server.js';

/** A memory channel that keeps its context, to ask what a channel may ask (language, conversations). */
class ReadingChannel extends MemoryChannel {
  context: ChannelContext | undefined;

  override async start(context: ChannelContext): Promise<void> {
    this.context = context;
    await super.start(context);
  }
}

let harness: Harness | undefined;
let directory: DirectoryServer | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await directory?.close();
  directory = undefined;
});

function userOf(said: Said): string {
  if (said.status !== 'accepted') throw new Error(`message ${said.messageId} was not accepted`);
  return said.userId;
}

/** The Telegram bot and a Telegram user account: two channels, one namespace of Telegram user ids. */
function telegramChannels() {
  return {
    bot: new ReadingChannel({ name: 'telegram-bot', accountNamespace: 'telegram' }),
    account: new ReadingChannel({ name: 'telegram-user', accountNamespace: 'telegram' }),
  };
}

describe('channels that share an account namespace', () => {
  it('make one Telegram user id one user with one profile and one phone, in two separate conversations', async () => {
    harness = await createHarness((call) => ({ text: `seen: ${userTexts(call).join(' | ')}` }));
    const { bot, account } = telegramChannels();
    const palaver = await harness.start({ identity: { phones: { defaultRegion: 'UA' } } }, { channels: [bot, account] });

    // Through the bot the person shares their contact (Telegram vouches for it) and sets the profile's language.
    const viaBot = await bot.say('[contact: me]', { accountId: '42', conversationId: '42', languageHint: 'uk', phone: '+380671234567' });
    expect((await bot.waitForReply(viaBot, { timeoutMs: 20_000 })).parts).toEqual(['seen: [contact: me]']);
    // Through the user account the same Telegram id writes in its own chat with the account.
    const viaAccount = await account.say('hello from my own chat', { accountId: '42', conversationId: '42', languageHint: 'en' });
    expect((await account.waitForReply(viaAccount, { timeoutMs: 20_000 })).parts).toEqual(['seen: hello from my own chat']);

    const userId = userOf(viaBot);
    expect(userOf(viaAccount)).toBe(userId);
    const user = (await palaver.store.users.findByAccount('telegram', '42'))!;
    expect(user).toMatchObject({ id: userId, phone: '380671234567' });
    expect(await palaver.store.users.findByAccount('telegram-bot', '42')).toBeUndefined();
    expect((await palaver.store.users.listAccounts(userId)).map((a) => [a.channel, a.accountId])).toEqual([['telegram', '42']]);
    // One profile, seeded once (from the bot's hint): the account channel speaks to them in it too.
    expect(JSON.parse((await palaver.store.profiles.get(userId))!.raw)).toMatchObject({ preferences: { interfaceLanguage: 'uk' } });
    expect(await account.context!.interfaceLanguage('42', 'en')).toBe('uk');
    // Two conversations, each on its channel, each with its own history.
    const sessions = await palaver.store.sessions.listByUser(userId);
    expect(sessions.map((session) => [session.channel, session.conversationId]).sort()).toEqual([
      ['telegram-bot', '42'],
      ['telegram-user', '42'],
    ]);
    expect((await account.context!.conversations('42')).map((c) => c.conversationId)).toEqual(['42']);
    expect((await account.context!.transcript('42', '42')).map((entry) => entry.text)).toEqual(['hello from my own chat', 'seen: hello from my own chat']);
    expect((await bot.context!.transcript('42', '42')).map((entry) => entry.text)).toEqual(['[contact: me]', 'seen: [contact: me]']);
    // The tools' `accounts` and the admin API name the account by its namespace.
    expect((await palaver.admin.user(userId))!.accounts.map((a) => a.channel)).toEqual(['telegram']);
    expect((await palaver.admin.userOfAccount('telegram-bot', '42'))?.id).toBe(userId);
    expect((await palaver.admin.userOfAccount('telegram', '42'))?.id).toBe(userId);
  });

  it('a relink through either channel moves the account and its conversations on both', async () => {
    harness = await createHarness(() => ({ text: 'ok' }));
    const { bot, account } = telegramChannels();
    const palaver = await harness.start({}, { channels: [bot, account] });
    await bot.waitForReply(await bot.say('hi', { accountId: '42' }), { timeoutMs: 20_000 });
    await account.waitForReply(await account.say('hi', { accountId: '42' }), { timeoutMs: 20_000 });
    const other = await bot.say('hi', { accountId: '99' });
    await bot.waitForReply(other, { timeoutMs: 20_000 });

    // The admin names the account by its channel's name; the namespace is what moves.
    expect((await palaver.admin.relink({ channel: 'telegram-bot', accountId: '42', toUserId: userOf(other) }, {})).ok).toBe(true);
    expect((await palaver.store.sessions.listByUser(userOf(other))).map((session) => `${session.channel}/${session.conversationId}`).sort()).toEqual([
      'telegram-bot/42',
      'telegram-bot/99',
      'telegram-user/42',
    ]);
    const events = await palaver.store.identityEvents.listByUser(userOf(other));
    expect(events).toMatchObject([{ kind: 'relink', channel: 'telegram', accountId: '42' }]);
    // The next message through the account channel is the new user's at once (the cache forgot the old one).
    expect(userOf(await account.say('still me', { accountId: '42' }))).toBe(userOf(other));
  });

  it("asks the team directory about the namespace's account, whichever channel it wrote through", async () => {
    directory = await startDirectoryServer();
    harness = await createHarness(() => ({ text: 'ok' }));
    const { bot, account } = telegramChannels();
    await harness.start({ identity: { resolver: { kind: 'mcp', url: directory.url, timeoutMs: 5_000 } } }, { channels: [bot, account] });
    const first = await bot.say('hi', { accountId: '42' });
    await bot.waitForReply(first, { timeoutMs: 20_000 });
    const second = await account.say('hi', { accountId: '42' });
    await account.waitForReply(second, { timeoutMs: 20_000 });
    expect(userOf(first)).toBe('user-42');
    expect(userOf(second)).toBe('user-42');
    expect(directory.calls.map((call) => call.args)).toContainEqual({ channel: 'telegram', account_id: '42' });
    expect(directory.calls.every((call) => call.args.channel === 'telegram')).toBe(true);
  });
});
