import { Long, type Message, type TelegramClient, type tl } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import { AnswerPolicy, type AnswerSetting } from '../../src/channels/telegram-user/answer-policy.js';
import { TelegramUserInbound, type InboundOutcome } from '../../src/channels/telegram-user/inbound.js';
import { OwnSends } from '../../src/channels/telegram-user/own-sends.js';
import { OwnerTakeover } from '../../src/channels/telegram-user/owner-takeover.js';
import { createTranscriber } from '../../src/models/openai-transcription.js';
import { createFakeClient, FakeMtproto, fakeMtprotoLink, SERVICE_USER_ID, type FakeMtprotoMessage } from '../../src/testing/fake-mtproto/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';
import { contactMedia, tlGroup, voiceMedia } from './tl-messages.js';

// The inbound side through the real @mtcute/node client on the fake Telegram: each message the client hands to
// onNewMessage goes to TelegramUserInbound, as the channel wires it; the fake context stands in for the pipeline
// (accepted = will be answered; record = stored without a turn).

const MINUTE = 60_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Rig {
  readonly fake: FakeMtproto;
  readonly client: TelegramClient;
  readonly context: FakeChannelContext;
  readonly ownSends: OwnSends;
  readonly clock: { now: number };
  /** What became of each message the client delivered, in order of arrival. */
  readonly outcomes: InboundOutcome[];
  /** Resolves once `count` messages were handled. */
  handled(count: number): Promise<InboundOutcome[]>;
}

async function startRig(options: { answer?: AnswerSetting; model?: ScriptedModelServer } = {}): Promise<Rig> {
  const fake = new FakeMtproto({ self: { id: 100, firstName: 'Olga' } });
  const client = createFakeClient(fakeMtprotoLink(fake));
  cleanups.push(() => client.destroy());
  const context = new FakeChannelContext();
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const ownSends = new OwnSends({ state: context.state, now });
  const takeover = await OwnerTakeover.load({ state: context.state, windowMs: 30 * MINUTE, now });
  const model = options.model;
  const inbound = new TelegramUserInbound({
    context,
    client,
    policy: new AnswerPolicy(options.answer),
    ownSends,
    takeover,
    ...(model ? { transcribe: createTranscriber({ baseUrl: `${model.baseUrl}`, model: 'whisper-1', apiKey: 'test-key-123456' }).transcribe } : {}),
  });
  const outcomes: InboundOutcome[] = [];
  const pending: Promise<void>[] = [];
  client.onNewMessage.add((message: Message) => {
    pending.push(inbound.handle(message).then((outcome) => void outcomes.push(outcome)));
  });
  const states: string[] = [];
  client.onConnectionState.add((state) => void states.push(state));
  await client.connect();
  await client.getMe();
  await client.startUpdatesLoop();
  await fake.waitForCall('updates.getDifference');
  await expect.poll(() => states.at(-1), { timeout: 15_000 }).toBe('connected');
  const handled = async (count: number) => {
    await expect.poll(() => outcomes.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(count);
    await Promise.all(pending);
    return outcomes.slice(0, count);
  };
  return { fake, client, context, ownSends, clock, outcomes, handled };
}

/** Answers `messages.getMessages` for replies (inputMessageReplyTo) and ids, from the fake's chats. */
function serveGetMessages(fake: FakeMtproto, people: readonly number[]): void {
  fake.on('messages.getMessages', (request) => {
    const all = people.flatMap((id) => fake.history(id));
    const found = (request as tl.messages.RawGetMessagesRequest).id.map((input) => {
      if (input._ === 'inputMessageReplyTo') return all.find((m) => m.id === all.find((r) => r.id === input.id)?.replyToId);
      if (input._ === 'inputMessageID') return all.find((m) => m.id === input.id);
      return undefined;
    });
    return {
      _: 'messages.messages',
      messages: found.map((m: FakeMtprotoMessage | undefined) => (m ? fake.messageTl(m) : { _: 'messageEmpty', id: 0 })),
      chats: [],
      users: [fake.self, ...people.map((id) => fake.user(id)!)].map((u) => fake.userTl(u)),
    };
  });
}

/**
 * A message in a basic group, pushed to the client. The fake keeps private chats only, so the update is made here
 * with the fake's next pts, and the fake's counter moves past it so its own next message is not taken for a repeat.
 */
function pushGroupMessage(fake: FakeMtproto, client: TelegramClient, fromUserId: number, text: string): void {
  const internals = fake as unknown as { pts: number };
  internals.pts += 1;
  const group = tlGroup(5_000);
  const message: tl.RawMessage = {
    _: 'message',
    id: 90_000,
    peerId: { _: 'peerChat', chatId: group.id },
    fromId: { _: 'peerUser', userId: fromUserId },
    date: Math.floor(Date.now() / 1000),
    message: text,
  };
  client.onServerUpdate.emit({
    _: 'updates',
    updates: [{ _: 'updateNewMessage', message, pts: internals.pts, ptsCount: 1 }],
    users: [fake.userTl(fake.user(fromUserId)!), fake.userTl(fake.self)],
    chats: [group],
    date: message.date,
    seq: 0,
  });
}

describe('telegram user account inbound, through the real client', () => {
  it("answers a person who writes, and never a group, a bot, Telegram's 777000 or a service message", async () => {
    const { fake, client, context, handled } = await startRig();
    const vera = fake.addUser({ firstName: 'Vera', username: 'vera' });
    const bot = fake.addUser({ firstName: 'Shop', username: 'shop_bot', bot: true });
    pushGroupMessage(fake, client, vera.id, 'hi everyone');
    fake.incoming(bot.id, 'Your order shipped');
    fake.incoming(SERVICE_USER_ID, 'Login code: 12345. Do not give this code to anyone.');
    fake.serviceMessage(vera.id);
    fake.incoming(vera.id, 'Hello! Are you open on Sunday?');
    const outcomes = await handled(5);
    expect(outcomes.map((o) => (o.kind === 'ignored' ? o.reason : o.kind))).toEqual(['not_private', 'bot', 'telegram_service', 'service', 'accepted']);
    expect(context.received.map((r) => [r.message.accountId, r.message.conversationId, r.message.text])).toEqual([
      [String(vera.id), String(vera.id), 'Hello! Are you open on Sunday?'],
    ]);
    expect(context.received[0]!.message.dedupeKey).toBe(`telegram-user:${vera.id}:${fake.history(vera.id).at(-1)!.id}`);
    expect(context.recorded).toEqual([]);
  });

  it('answers only contacts with answer: contacts', async () => {
    const { fake, context, handled } = await startRig({ answer: 'contacts' });
    const stranger = fake.addUser({ firstName: 'Stranger' });
    const friend = fake.addUser({ firstName: 'Friend', contact: true });
    fake.incoming(stranger.id, 'hi, got your number from a friend');
    fake.incoming(friend.id, "hi, it's me");
    await handled(2);
    expect(context.received.map((r) => r.message.accountId)).toEqual([String(friend.id)]);
  });

  it('does not take its own sent message for the owner: in this process, or echoed after a crash', async () => {
    const { fake, client, context, ownSends, handled } = await startRig();
    const vera = fake.addUser({ firstName: 'Vera' });
    // A send whose echo reaches onNewMessage before sendText returns: the send took effect, its answer is late, and
    // the client catches up meanwhile (as after a reconnect mid-send). The catch-up is asked for, not left to mtcute's
    // pts-gap timer: that timer can lose its wake-up under load (mtcute 0.30/0.31), which stalled this test for good.
    await ownSends.willSend(String(vera.id), 'delivery-1', 'Sunday 10 to 16.');
    const send = fake.holdNext('messages.sendMessage');
    const sending = client.sendText(vera.id, 'Sunday 10 to 16.', { randomId: Long.fromInt(77) });
    await send.applied;
    fake.tellClientsToCatchUp();
    await handled(1);
    send.release();
    await ownSends.sent(String(vera.id), 'delivery-1', (await sending).id);
    // The previous process stored its intent and sent the part, then died before its id was stored: its echo comes
    // back as an outgoing message like any other.
    await ownSends.willSend(String(vera.id), 'delivery-2', 'See you then!');
    fake.ownerWrites(vera.id, 'See you then!');
    const outcomes = await handled(2);
    expect(outcomes).toEqual([
      { kind: 'ignored', reason: 'own_send' },
      { kind: 'ignored', reason: 'own_send' },
    ]);
    expect(context.recorded).toEqual([]);
    expect(context.received).toEqual([]);
  });

  it("owner takeover: the owner's message is stored as the account's side, the person's next one held, and after the window answered again", async () => {
    const { fake, context, clock, handled } = await startRig();
    const vera = fake.addUser({ firstName: 'Vera' });
    const other = fake.addUser({ firstName: 'Ivan' });
    fake.incoming(vera.id, 'Can I bring my dog?');
    await handled(1);
    const owner = fake.ownerWrites(vera.id, 'Hi Vera, Olga here. Of course, dogs are welcome!');
    await handled(2);
    clock.now += 10 * MINUTE;
    const held = fake.incoming(vera.id, 'Wonderful, thank you!');
    fake.incoming(other.id, 'Hello?');
    await handled(4);
    clock.now += 21 * MINUTE;
    fake.incoming(vera.id, 'One more thing: is there parking?');
    const outcomes = await handled(5);
    expect(outcomes.map((o) => o.kind)).toEqual(['accepted', 'owner', 'held', 'accepted', 'accepted']);
    expect(context.received.map((r) => r.message.text)).toEqual(['Can I bring my dog?', 'Hello?', 'One more thing: is there parking?']);
    expect(
      context.recorded.map((r) => ({
        role: r.message.role,
        source: r.message.source,
        text: r.message.text,
        messageId: r.message.messageId,
        chat: r.conversation.conversationId,
      })),
    ).toEqual([
      { role: 'assistant', source: 'owner', text: 'Hi Vera, Olga here. Of course, dogs are welcome!', messageId: String(owner.id), chat: String(vera.id) },
      { role: 'user', source: 'held', text: 'Wonderful, thank you!', messageId: String(held.id), chat: String(vera.id) },
    ]);
  });

  it('a takeover survives a restart inside the window', async () => {
    const first = await startRig();
    const vera = first.fake.addUser({ firstName: 'Vera' });
    first.fake.ownerWrites(vera.id, 'I will answer this myself.');
    await first.handled(1);
    await first.client.destroy();
    // A new process on the same channel state.
    const takeover = await OwnerTakeover.load({ state: first.context.state, windowMs: 30 * MINUTE });
    expect(takeover.heldUntil(String(vera.id))).toBeDefined();
  });

  it("hands over the phone of a contact the person shares of themselves; someone else's card is text only", async () => {
    const { fake, context, handled } = await startRig();
    const vera = fake.addUser({ firstName: 'Vera', lastName: 'K' });
    fake.incoming(vera.id, { media: contactMedia(vera.id, '79991234567', 'Vera', 'K') });
    fake.incoming(vera.id, { media: contactMedia(555, '79990000001', 'Masha') });
    await handled(2);
    expect(context.received.map((r) => [r.message.text, r.message.phone])).toEqual([
      ['[contact: Vera K, 79991234567]', '79991234567'],
      ['[contact: Masha, 79990000001]', undefined],
    ]);
  });

  it('quotes the message a reply answers, fetched from Telegram', async () => {
    const { fake, client, context, handled } = await startRig();
    const vera = fake.addUser({ firstName: 'Vera' });
    serveGetMessages(fake, [vera.id]);
    const question = await client.sendText(vera.id, 'Which day suits you?\nWe have Tue and Thu.');
    fake.incoming(vera.id, { text: 'Thursday', replyToId: question.id });
    await handled(1);
    expect(context.received.map((r) => r.message.text)).toEqual(['> Which day suits you?\n> We have Tue and Thu.\n\nThursday']);
  });

  it('transcribes a voice message downloaded through the client, with the transcriber the bot uses', async () => {
    const model = await startScriptedModelServer({
      script: () => ({ text: 'unused' }),
      transcription: (call) => ({ text: call.audio.byteLength === 6 ? 'I would like a haircut on Friday' : 'unexpected audio' }),
    });
    cleanups.push(() => model.close());
    const { fake, context, handled } = await startRig({ model });
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.on('upload.getFile', () => ({ _: 'upload.file', type: { _: 'storage.fileUnknown' }, mtime: 0, bytes: new Uint8Array([1, 2, 3, 4, 5, 6]) }));
    fake.incoming(vera.id, { media: voiceMedia(6) });
    await handled(1);
    expect(context.received.map((r) => r.message.text)).toEqual(['I would like a haircut on Friday']);
    expect(model.transcriptions).toHaveLength(1);
    expect(model.transcriptions[0]).toMatchObject({ model: 'whisper-1', filename: 'voice.ogg', mimeType: 'audio/ogg' });
  });
});
