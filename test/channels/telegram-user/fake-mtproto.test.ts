import { Long, type Message, type TelegramClient } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createFakeClient,
  FakeMtproto,
  fakeMtprotoLink,
  remoteFakeMtprotoLink,
  serveFakeMtproto,
  type FakeMtprotoLink,
} from '../../../src/testing/fake-mtproto/index.js';

// The fake Telegram under a real mtcute client, in-process and over the loopback form a spawned process uses.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function signedInClient(fake: FakeMtproto, link: FakeMtprotoLink): Promise<{ client: TelegramClient; received: Message[] }> {
  const client = createFakeClient(link);
  cleanups.push(() => client.destroy());
  const received: Message[] = [];
  const states: string[] = [];
  client.onNewMessage.add((message) => void received.push(message));
  client.onConnectionState.add((state) => void states.push(state));
  await client.connect();
  await client.getMe();
  await client.startUpdatesLoop();
  // The first catch-up fixes the update state the client counts from: what arrives later is news to it.
  await fake.waitForCall('updates.getDifference');
  await expect.poll(() => states.at(-1), { timeout: 15_000 }).toBe('connected');
  return { client, received };
}

describe.each([
  ['in-process', async (fake: FakeMtproto) => fakeMtprotoLink(fake)],
  [
    'over loopback HTTP',
    async (fake: FakeMtproto) => {
      const server = await serveFakeMtproto(fake);
      cleanups.push(() => server.close());
      return remoteFakeMtprotoLink(server.url);
    },
  ],
])('fake MTProto server (%s)', (_name, linkTo) => {
  it('a real client signs in, receives a private message and answers it once per random_id', async () => {
    const fake = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
    const ann = fake.addUser({ firstName: 'Ann', username: 'ann' });
    const { client, received } = await signedInClient(fake, await linkTo(fake));
    expect((await client.getMe()).firstName).toBe('Reception');

    fake.incoming(ann.id, 'hello there');
    await expect.poll(() => received.map((m) => m.text), { timeout: 15_000 }).toEqual(['hello there']);
    expect(received[0]?.sender.id).toBe(ann.id);
    expect(received[0]?.isOutgoing).toBe(false);

    const randomId = Long.fromString('-7654321012345');
    const first = await client.sendText(ann.id, 'hi Ann', { randomId });
    const again = await client.sendText(ann.id, 'hi Ann', { randomId });
    expect(again.id).toBe(first.id);
    expect(fake.sent(ann.id).map((m) => [m.text, m.randomId])).toEqual([['hi Ann', '-7654321012345']]);
  });

  it('catches up on what arrived while the connection was down', async () => {
    const fake = new FakeMtproto();
    const bob = fake.addUser({ firstName: 'Bob' });
    const { client, received } = await signedInClient(fake, await linkTo(fake));
    fake.dropConnection();
    fake.incoming(bob.id, 'while you were away');
    expect(received).toEqual([]);
    fake.restoreConnection();
    // mtcute does not catch up by itself after a reconnect: the channel forces it, as here.
    client.handleClientUpdate({ _: 'updatesTooLong' }, false);
    await expect.poll(() => received.map((m) => m.text), { timeout: 15_000 }).toEqual(['while you were away']);
  });

  it('fails a call as scripted: a flood wait over the limit throws with its seconds', async () => {
    const fake = new FakeMtproto();
    const cid = fake.addUser();
    const { client } = await signedInClient(fake, await linkTo(fake));
    fake.failNext('messages.sendMessage', { code: 420, message: 'FLOOD_WAIT_600' });
    await expect(client.sendText(cid.id, 'x')).rejects.toMatchObject({ code: 420, text: 'FLOOD_WAIT_%d', seconds: 600 });
    expect(fake.sent()).toEqual([]);
  });
});
