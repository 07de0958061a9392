import type { TelegramClient } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import { importOnFirstContact, syncHistory } from '../../../src/channels/telegram-user/history-sync.js';
import { ChannelError } from '../../../src/domain/errors.js';
import { createFakeClient, FakeMtproto, fakeMtprotoLink } from '../../../src/testing/fake-mtproto/index.js';
import { FakeChannelContext, memoryState } from '../fake-pipeline.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connectedClient(fake: FakeMtproto): Promise<TelegramClient> {
  const client = createFakeClient(fakeMtprotoLink(fake));
  cleanups.push(() => client.destroy());
  await client.connect();
  return client;
}

/** A chat of 251 messages (more than two pages of getHistory), both sides, with a service message and a contact. */
function busyChat(fake: FakeMtproto) {
  const ann = fake.addUser({ firstName: 'Ann', lastName: 'Lee', username: 'ann_lee' });
  for (let index = 1; index <= 125; index += 1) {
    fake.incoming(ann.id, `question ${index}`);
    fake.ownerWrites(ann.id, `answer ${index}`);
  }
  fake.serviceMessage(ann.id);
  fake.incoming(ann.id, { media: { _: 'messageMediaContact', phoneNumber: '15550123', firstName: 'Bob', lastName: '', vcard: '', userId: 0 } });
  return ann;
}

describe('Telegram history sync', () => {
  it('stores a private chat in order, both sides, each message once, marked imported; a second sync stores nothing new', async () => {
    const fake = new FakeMtproto();
    const ann = busyChat(fake);
    const client = await connectedClient(fake);
    const context = new FakeChannelContext();
    const first = await syncHistory(client, '@ann_lee', (conversation, entries) => context.record(conversation, entries), { limit: 1000 });
    expect(first).toMatchObject({ user: { id: ann.id, displayName: 'Ann Lee', username: 'ann_lee' }, fetched: 251, stored: 251 });
    const texts = context.recorded.map((r) => r.message.text);
    expect(texts.slice(0, 4)).toEqual(['question 1', 'answer 1', 'question 2', 'answer 2']);
    // Media read as the live channel reads it (the shared reader of src/channels/telegram/).
    expect(texts.at(-1)).toBe('[contact: Bob, 15550123]');
    expect(context.recorded.map((r) => r.message.role).slice(0, 2)).toEqual(['user', 'assistant']);
    const ids = context.recorded.map((r) => Number(r.message.messageId));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(
      context.recorded.every(
        (r) => r.message.source === 'imported' && r.conversation.conversationId === String(ann.id) && r.conversation.accountId === String(ann.id),
      ),
    ).toBe(true);
    // No turn: nothing accepted, nothing sent.
    expect(context.received).toEqual([]);
    expect(fake.sent()).toEqual([]);

    const again = await syncHistory(client, String(ann.id), (conversation, entries) => context.record(conversation, entries), { limit: 1000 });
    expect(again).toMatchObject({ fetched: 251, stored: 0 });
    expect(context.recorded).toHaveLength(251);
  });

  it('takes the newest N after a given message id', async () => {
    const fake = new FakeMtproto();
    const ann = busyChat(fake);
    const client = await connectedClient(fake);
    const context = new FakeChannelContext();
    const after = fake.history(ann.id)[239]!.id;
    const result = await syncHistory(client, 'ann_lee', (conversation, entries) => context.record(conversation, entries), { after, limit: 5 });
    const expected = fake
      .history(ann.id)
      .filter((m) => m.id > after && m.action === undefined)
      .slice(-5);
    expect(result).toMatchObject({ fetched: 5, stored: 5, firstId: expected[0]!.id, lastId: expected.at(-1)!.id });
    expect(context.recorded.map((r) => Number(r.message.messageId))).toEqual(expected.map((m) => m.id));
  });

  it('refuses bots and the service account: private chats with people only', async () => {
    const fake = new FakeMtproto();
    const bot = fake.addUser({ firstName: 'Shop', username: 'shop_bot', bot: true });
    const client = await connectedClient(fake);
    const context = new FakeChannelContext();
    const record = (conversation: Parameters<typeof context.record>[0], entries: Parameters<typeof context.record>[1]) => context.record(conversation, entries);
    await expect(syncHistory(client, bot.id, record, { limit: 10 })).rejects.toThrow(/is a bot: .*private chats with people only/);
    await expect(syncHistory(client, 777000, record, { limit: 10 })).rejects.toThrow(ChannelError);
    await expect(syncHistory(client, -100123, record, { limit: 10 })).rejects.toThrow(/group or channel/);
  });

  it('imports the last N messages before the first message of a new chat, once per chat', async () => {
    const fake = new FakeMtproto();
    const ann = fake.addUser({ firstName: 'Ann' });
    for (let index = 1; index <= 5; index += 1) fake.ownerWrites(ann.id, `earlier ${index}`);
    const arrived = fake.incoming(ann.id, 'hello again');
    const client = await connectedClient(fake);
    const context = new FakeChannelContext();
    const state = memoryState();
    const target = { record: context.record.bind(context), state };
    const first = await importOnFirstContact(client, target, ann.id, arrived.id, 3);
    expect(first).toMatchObject({ fetched: 3, stored: 3 });
    expect(context.recorded.map((r) => r.message.text)).toEqual(['earlier 3', 'earlier 4', 'earlier 5']);
    const callsBefore = fake.callsOf('messages.getHistory').length;
    expect(await importOnFirstContact(client, target, ann.id, arrived.id + 1, 3)).toBeUndefined();
    expect(fake.callsOf('messages.getHistory')).toHaveLength(callsBefore);
    expect(await importOnFirstContact(client, { record: target.record, state: memoryState() }, ann.id, arrived.id, 0)).toBeUndefined();
  });
});
