import { describe, expect, it } from 'vitest';
import { AnswerPolicy, TELEGRAM_SERVICE_USER_ID } from '../../src/channels/telegram-user/answer-policy.js';
import { channelPost, groupMessage, privateMessage, self, serviceMessage, tlChannel, tlGroup, tlUser } from './tl-messages.js';

const vera = tlUser(42, { firstName: 'Vera', username: 'vera_k' });
const friend = tlUser(43, { firstName: 'Ivan', contact: true });

describe('telegram user account: who is answered', () => {
  it('answers everyone who writes in a private chat by default', () => {
    const policy = new AnswerPolicy();
    expect(policy.check(privateMessage(vera, { message: 'hello' }))).toBeUndefined();
    expect(policy.check(privateMessage(friend, { message: 'hello' }))).toBeUndefined();
  });

  it('never answers groups, channels, Saved Messages or service messages', () => {
    const policy = new AnswerPolicy('everyone');
    expect(policy.check(groupMessage(vera, tlGroup(500), 'hi all'))).toBe('not_private');
    expect(policy.check(channelPost(tlChannel(600), 'news'))).toBe('not_private');
    expect(policy.check(privateMessage(self, { message: 'note to self' }))).toBe('own_chat');
    expect(policy.check(serviceMessage(vera))).toBe('service');
  });

  it("never answers bots, Telegram's 777000 or support accounts, whatever the setting", () => {
    const bot = tlUser(7, { bot: true, username: 'somebot', botInfoVersion: 1 });
    const telegram = tlUser(TELEGRAM_SERVICE_USER_ID, { firstName: 'Telegram', verified: true });
    const support = tlUser(8, { support: true });
    for (const policy of [new AnswerPolicy('everyone'), new AnswerPolicy([7, TELEGRAM_SERVICE_USER_ID, 8, '@somebot'])]) {
      expect(policy.check(privateMessage(bot, { message: '/start' }))).toBe('bot');
      expect(policy.check(privateMessage(telegram, { message: 'Login code: 12345' }))).toBe('telegram_service');
      expect(policy.check(privateMessage(support, { message: 'hi' }))).toBe('telegram_service');
    }
  });

  it('answers only contacts with answer: contacts', () => {
    const policy = new AnswerPolicy('contacts');
    expect(policy.check(privateMessage(friend, { message: 'hey' }))).toBeUndefined();
    expect(policy.check(privateMessage(vera, { message: 'hey' }))).toBe('not_contact');
  });

  it('answers only the listed people, by id or by username (any case, with or without @)', () => {
    const byId = new AnswerPolicy([42, '43']);
    expect(byId.check(privateMessage(vera, { message: 'a' }))).toBeUndefined();
    expect(byId.check(privateMessage(friend, { message: 'a' }))).toBeUndefined();
    expect(byId.check(privateMessage(tlUser(44), { message: 'a' }))).toBe('not_listed');
    const byName = new AnswerPolicy(['@Vera_K']);
    expect(byName.check(privateMessage(vera, { message: 'a' }))).toBeUndefined();
    expect(byName.check(privateMessage(friend, { message: 'a' }))).toBe('not_listed');
    // A collectible username (usernames list) counts as well.
    const collectible = tlUser(45, { usernames: [{ _: 'username', username: 'vera_k', active: true }] });
    expect(byName.check(privateMessage(collectible, { message: 'a' }))).toBeUndefined();
  });

  it("judges the owner's outgoing messages by the person on the other side, not by the account", () => {
    const policy = new AnswerPolicy('contacts');
    expect(policy.check(privateMessage(friend, { message: 'see you' }, { outgoing: true }))).toBeUndefined();
    expect(policy.check(privateMessage(vera, { message: 'see you' }, { outgoing: true }))).toBe('not_contact');
  });
});
