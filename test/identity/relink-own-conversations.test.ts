import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { ChannelContext } from '../../src/domain/ports/channel.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

/** A memory channel that keeps its context, to read conversations and transcripts as a channel would show them. */
class ReadingChannel extends MemoryChannel {
  context: ChannelContext | undefined;

  override async start(context: ChannelContext): Promise<void> {
    this.context = context;
    await super.start(context);
  }
}

let postgres: TestPostgresDatabase;
let harness: Harness | undefined;
let runs = 0;
beforeAll(async () => {
  postgres = await createTestPostgresDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await postgres?.drop();
});

const backends = [
  { name: 'SQLite', url: (): string | undefined => undefined },
  { name: 'PostgreSQL', url: (): string | undefined => postgres.url },
];

describe.each(backends)('a relink on $name', ({ url }) => {
  /**
   * User U holds two accounts on one channel: `first` (with a private conversation) and `second` (joined to U by an
   * admin relink). V is somebody else. Then `second` is relinked to V.
   */
  async function start() {
    harness = await createHarness((call) => ({ text: `echo: ${lastUserText(call)}` }));
    // A channel of its own per test: the PostgreSQL database is shared by the whole file.
    const channel = `webchat-${(runs += 1)}`;
    const chat = new ReadingChannel({ name: channel });
    const database = url();
    const palaver = await harness.start(database === undefined ? {} : { database: { url: database } }, { channels: [chat] });
    const say = async (accountId: string, conversationId: string, text: string) =>
      (await chat.waitForReply(await chat.say(text, { accountId, conversationId }))).parts;
    const userOf = async (accountId: string) => (await palaver.store.users.findByAccount(channel, accountId))!.id;

    await say('first', 'first-private', 'my diagnosis is secret');
    await say('second', 'second-own', 'hello from the second account');
    await say('v', 'v-own', 'I am V');
    const [u, v] = [await userOf('first'), await userOf('v')];
    expect((await palaver.admin.relink({ channel, accountId: 'second', toUserId: u }, {})).ok).toBe(true);
    expect(await userOf('second')).toBe(u);
    return { palaver, channel, say, userOf, u, v, context: chat.context! };
  }

  it("moves only the moved account's conversations: the new owner cannot list or read the old owner's other ones", async () => {
    const { palaver, channel, userOf, u, v, context } = await start();
    // Before the move, both accounts are U's: each sees U's conversations on the channel.
    expect((await context.conversations('second')).map((c) => c.conversationId).sort()).toEqual(['first-private', 'second-own']);

    expect((await palaver.admin.relink({ channel, accountId: 'second', toUserId: v }, {})).ok).toBe(true);
    expect(await userOf('second')).toBe(v);

    // The moved account took its own conversation along, and nothing of U's other account.
    const seenBySecond = (await context.conversations('second')).map((c) => c.conversationId).sort();
    expect(seenBySecond).toEqual(['second-own', 'v-own']);
    await expect(context.transcript('second', 'first-private')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(context.transcript('v', 'first-private')).rejects.toMatchObject({ code: 'forbidden' });
    expect((await context.transcript('second', 'second-own')).map((entry) => entry.text)).toEqual([
      'hello from the second account',
      'echo: hello from the second account',
    ]);
    expect((await palaver.store.sessions.listByUser(v)).map((session) => session.conversationId).sort()).toEqual(['second-own', 'v-own']);

    // U keeps their private conversation, still readable through their remaining account.
    expect((await context.conversations('first')).map((c) => c.conversationId)).toEqual(['first-private']);
    expect((await context.transcript('first', 'first-private')).map((entry) => entry.text)).toEqual(['my diagnosis is secret', 'echo: my diagnosis is secret']);
    expect((await palaver.store.sessions.listByUser(u)).map((session) => session.conversationId)).toEqual(['first-private']);
  });

  it("leaves with the old owner a conversation of the moved account that the old owner's other account wrote in too", async () => {
    const { palaver, channel, say, u, v, context } = await start();
    // U writes into the second account's conversation through the first account (it is U's, so it may).
    expect(await say('first', 'second-own', 'my card number is 4242')).toEqual(['echo: my card number is 4242']);

    expect((await palaver.admin.relink({ channel, accountId: 'second', toUserId: v }, {})).ok).toBe(true);

    await expect(context.transcript('second', 'second-own')).rejects.toMatchObject({ code: 'forbidden' });
    expect((await context.conversations('second')).map((c) => c.conversationId)).toEqual(['v-own']);
    expect((await palaver.store.sessions.findByConversation(channel, 'second-own'))?.userId).toBe(u);
    expect((await palaver.store.sessions.listByUser(v)).map((session) => session.conversationId)).toEqual(['v-own']);
  });
});
