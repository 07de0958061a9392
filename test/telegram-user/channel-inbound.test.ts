import { PassThrough } from 'node:stream';
import { MemoryStorage } from '@mtcute/node';
import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { telegramUserPlugin } from '../../src/channels/telegram-user/plugin.js';
import { TelegramUserChannel, type TelegramUserChannelOptions } from '../../src/channels/telegram-user/telegram-user-channel.js';
import { createTranscriber } from '../../src/models/openai-transcription.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { PalaverMetrics } from '../../src/observability/metrics.js';
import { FakeMtproto, fakeMtprotoLink, SERVICE_USER_ID } from '../../src/testing/fake-mtproto/index.js';
import { startFakeTelegram, type ModelScript } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { readSqliteFile } from '../support/sqlite-file.js';
import { contactMedia, voiceMedia } from './tl-messages.js';

// The user-account channel's inbound side end to end: the real @mtcute/node client on the fake Telegram, the real
// pipeline (SQLite inbox, scripted model over HTTP, outbox). "Answered" means a reply reached the fake Telegram.

const MINUTE = 60_000;
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const echo: ModelScript = (call) => ({ text: `heard: ${lastUserText(call)}` });

interface ChannelRig {
  readonly harness: Harness;
  readonly palaver: Palaver;
  readonly fake: FakeMtproto;
  readonly channel: TelegramUserChannel;
  readonly clock: { now: number };
}

async function startChannel(options: Partial<TelegramUserChannelOptions> & { script?: ModelScript; transcription?: boolean } = {}): Promise<ChannelRig> {
  harness = await createHarness(options.script ?? echo);
  const fake = new FakeMtproto({ self: { id: 100, firstName: 'Olga' } });
  const clock = { now: Date.now() };
  const { script: _script, transcription, ...channelOptions } = options;
  const channel = new TelegramUserChannel({
    apiId: 1,
    apiHash: '0123456789abcdef0123456789abcdef',
    session: new MemoryStorage(),
    network: fakeMtprotoLink(fake),
    quietWindowMs: 50,
    mtcuteLogLevel: 0,
    now: () => clock.now,
    ...(transcription
      ? { transcribe: createTranscriber({ baseUrl: harness.model.baseUrl, apiKey: TEST_SECRETS.modelApiKey, model: 'whisper-1' }).transcribe }
      : {}),
    ...channelOptions,
  });
  const palaver = await harness.start({ channels: { web: { enabled: false } } }, { channels: [channel] });
  await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('connected');
  return { harness, palaver, fake, channel, clock };
}

/** A debug logger whose lines the test reads back. */
function collectedLogger(): { readonly logger: Logger; readonly lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { logger: createLogger({ level: 'debug', destination: sink }), lines };
}

function inboundCount(h: Harness): number {
  return readSqliteFile(h.databaseUrl, (db) => Number(db.get<{ n: number }>('SELECT count(*) AS n FROM inbound_messages')?.n));
}

describe('telegram user account: inbound end to end', () => {
  it("answers the person who writes, once; never a bot, Telegram's 777000 or a service message", async () => {
    const { fake, harness } = await startChannel();
    const vera = fake.addUser({ firstName: 'Vera' });
    const bot = fake.addUser({ firstName: 'Shop', bot: true });
    fake.incoming(bot.id, 'Your order shipped');
    fake.incoming(SERVICE_USER_ID, 'Login code: 12345');
    fake.serviceMessage(vera.id);
    fake.incoming(vera.id, 'Are you open on Sunday?');
    const [reply] = await fake.waitForSent(1, { chatId: vera.id });
    expect(reply!.text).toBe('heard: Are you open on Sunday?');
    // Only the person's message was stored; nothing went anywhere else, and the reply did not start a takeover.
    expect(inboundCount(harness)).toBe(1);
    fake.incoming(vera.id, 'And on Monday?');
    await fake.waitForSent(2, { chatId: vera.id });
    expect(fake.sent().map((m) => [m.chatId, m.text])).toEqual([
      [vera.id, 'heard: Are you open on Sunday?'],
      [vera.id, 'heard: And on Monday?'],
    ]);
  });

  it('does not take its own reply for the owner when a catch-up after a restart replays it', async () => {
    const first = await startChannel();
    const { fake } = first;
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.incoming(vera.id, 'Hello?');
    const internals = fake as unknown as { pts: number };
    const ptsBeforeReply = internals.pts;
    await fake.waitForSent(1, { chatId: vera.id });
    await first.palaver.close();
    // The next process's session was saved before the reply (a crash before mtcute stored the update state): its
    // catch-up replays the reply as an outgoing message.
    const session = new MemoryStorage();
    const int32 = (value: number) => {
      const bytes = new Uint8Array(4);
      new DataView(bytes.buffer).setInt32(0, value, true);
      return bytes;
    };
    session.kv.set('updates_pts', int32(ptsBeforeReply));
    session.kv.set('updates_qts', int32(0));
    session.kv.set('updates_date', int32(Math.floor(Date.now() / 1000)));
    session.kv.set('updates_seq', int32(0));
    const logs = collectedLogger();
    const channel = new TelegramUserChannel({
      apiId: 1,
      apiHash: '0123456789abcdef0123456789abcdef',
      session,
      network: fakeMtprotoLink(fake),
      quietWindowMs: 50,
      mtcuteLogLevel: 0,
      logger: logs.logger,
    });
    await first.harness.start({ channels: { web: { enabled: false } } }, { channels: [channel] });
    const replayed = () => logs.lines.filter((l) => l['msg'] === 'telegram user-account message handled' && l['reason'] === 'own_send');
    await expect.poll(() => replayed().length, { timeout: 15_000 }).toBe(1);
    fake.incoming(vera.id, 'Are you there?');
    await fake.waitForSent(2, { chatId: vera.id });
    expect(logs.lines.filter((l) => String(l['msg']).includes('the owner wrote by hand'))).toEqual([]);
  });

  it('answers only the people listed in answer', async () => {
    const { fake } = await startChannel({ answer: ['@vera_k'] });
    const stranger = fake.addUser({ firstName: 'Stranger' });
    const vera = fake.addUser({ firstName: 'Vera', username: 'Vera_K' });
    fake.incoming(stranger.id, 'hi');
    fake.incoming(vera.id, 'hi, it is Vera');
    await fake.waitForSent(1, { chatId: vera.id });
    expect(fake.sent().map((m) => m.chatId)).toEqual([vera.id]);
  });

  it("hands the phone of the person's own contact card to identity, vouched for by Telegram", async () => {
    const { fake, palaver } = await startChannel();
    const vera = fake.addUser({ firstName: 'Vera', lastName: 'K' });
    fake.incoming(vera.id, { media: contactMedia(vera.id, '+380671234567', 'Vera', 'K') });
    const [reply] = await fake.waitForSent(1, { chatId: vera.id });
    expect(reply!.text).toBe('heard: [contact: Vera K, +380671234567]');
    const user = await palaver.store.users.findByPhone('380671234567');
    expect(user).toBeDefined();
    // A friend's card is read, not taken as anyone's phone.
    fake.incoming(vera.id, { media: contactMedia(555, '+380501112233', 'Masha') });
    await fake.waitForSent(2, { chatId: vera.id });
    expect(await palaver.store.users.findByPhone('380501112233')).toBeUndefined();
  });

  it('quotes the message a reply answers', async () => {
    const { fake, channel } = await startChannel();
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.on('messages.getMessages', (request) => {
      const ids = (request as { id: { _: string; id: number }[] }).id;
      const all = fake.history(vera.id);
      const wanted = ids.map((input) =>
        input._ === 'inputMessageReplyTo' ? all.find((m) => m.id === all.find((r) => r.id === input.id)?.replyToId) : all.find((m) => m.id === input.id),
      );
      return {
        _: 'messages.messages',
        messages: wanted.map((m) => (m ? fake.messageTl(m) : { _: 'messageEmpty', id: 0 })),
        chats: [],
        users: [fake.userTl(fake.self), fake.userTl(vera)],
      };
    });
    const question = await channel.client.sendText(vera.id, 'Tuesday or Thursday?');
    fake.incoming(vera.id, { text: 'Thursday', replyToId: question.id });
    const [reply] = await fake.waitForSent(2, { chatId: vera.id }).then((sent) => sent.slice(1));
    expect(reply!.text).toBe('heard: > Tuesday or Thursday?\n\nThursday');
  });

  it('transcribes a voice message with the transcriber the bot uses and answers the transcript', async () => {
    const { fake, harness } = await startChannel({ transcription: true });
    harness.model.setTranscriptionScript((call) => ({ text: call.audio.byteLength === 6 ? 'a haircut on Friday please' : 'unexpected audio' }));
    fake.on('upload.getFile', () => ({ _: 'upload.file', type: { _: 'storage.fileUnknown' }, mtime: 0, bytes: new Uint8Array([1, 2, 3, 4, 5, 6]) }));
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.incoming(vera.id, { media: voiceMedia(6) });
    const [reply] = await fake.waitForSent(1, { chatId: vera.id });
    expect(reply!.text).toBe('heard: a haircut on Friday please');
    expect(harness.model.transcriptions[0]).toMatchObject({ model: 'whisper-1', filename: 'voice.ogg', mimeType: 'audio/ogg' });
  });

  it('registers its count of taken-over chats for the gauge at start', async () => {
    // The metrics hooks as app.ts passes them; a takeover itself needs ChannelContext.record (h2, below).
    const metrics = new PalaverMetrics({ channels: [telegramUserPlugin] });
    const { palaver } = await startChannel({
      onOwnerTakeover: () => metrics.channel(telegramUserPlugin).ownerTakeovers.inc(),
      watchTakenOverChats: (count) => metrics.channel(telegramUserPlugin).watchTakenOverChats(count),
    });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^palaver_telegram_user_taken_over_chats 0$/m);
    expect(text).toMatch(/^palaver_telegram_user_owner_takeovers_total 0$/m);
    await palaver.close();
  });
});

// Through ChannelContext.record.
describe('telegram user account: owner takeover end to end', () => {
  it("stores the owner's message as the account's side, holds the person's next one, answers again after the window", async () => {
    const logs = collectedLogger();
    const metrics = new PalaverMetrics({ channels: [telegramUserPlugin] });
    const { fake, clock, harness } = await startChannel({
      ownerTakeoverMinutes: 30,
      logger: logs.logger,
      onOwnerTakeover: () => metrics.channel(telegramUserPlugin).ownerTakeovers.inc(),
      watchTakenOverChats: (count) => metrics.channel(telegramUserPlugin).watchTakenOverChats(count),
    });
    const said = (line: string) => logs.lines.some((l) => String(l['msg']).includes(line));
    const vera = fake.addUser({ firstName: 'Vera' });
    fake.incoming(vera.id, 'Can I bring my dog?');
    await fake.waitForSent(1, { chatId: vera.id });
    fake.ownerWrites(vera.id, 'Olga here: of course, dogs are welcome!');
    await expect.poll(() => said('the agent steps back there'), { timeout: 15_000 }).toBe(true);
    const during = await metrics.registry.metrics();
    expect(during).toMatch(/^palaver_telegram_user_owner_takeovers_total 1$/m);
    expect(during).toMatch(/^palaver_telegram_user_taken_over_chats 1$/m);
    fake.incoming(vera.id, 'Wonderful, thank you!');
    await expect.poll(() => said('the owner has taken this chat over'), { timeout: 15_000 }).toBe(true);
    clock.now += 31 * MINUTE;
    expect(await metrics.registry.metrics()).toMatch(/^palaver_telegram_user_taken_over_chats 0$/m);
    fake.incoming(vera.id, 'Is there parking?');
    const sent = await fake.waitForSent(2, { chatId: vera.id });
    expect(sent.map((m) => m.text)).toEqual(['heard: Can I bring my dog?', 'heard: Is there parking?']);
    // The model saw the owner's words as the account's side and the held message, in order, before the new one.
    const call = harness.model.calls.at(-1)!;
    const seen = call.messages.flatMap((m) => (m.type === 'message' ? [`${m.role}: ${m.content}`] : []));
    expect(seen.slice(-4)).toEqual([
      'assistant: heard: Can I bring my dog?',
      'assistant: Olga here: of course, dogs are welcome!',
      'user: Wonderful, thank you!',
      'user: Is there parking?',
    ]);
  });
});

describe('telegram user account and the bot: one person', () => {
  it('the same Telegram user writing to the bot and to the user account is one Palaver user, with one phone and two conversations', async () => {
    harness = await createHarness(echo);
    const botApi = await startFakeTelegram();
    const fake = new FakeMtproto({ self: { id: 100, firstName: 'Olga' } });
    const channel = new TelegramUserChannel({
      apiId: 1,
      apiHash: '0123456789abcdef0123456789abcdef',
      session: new MemoryStorage(),
      network: fakeMtprotoLink(fake),
      quietWindowMs: 50,
      mtcuteLogLevel: 0,
    });
    try {
      const palaver = await harness.start(
        { channels: { web: { enabled: false }, telegram: { token: botApi.token, apiRoot: botApi.apiRoot, quietWindowMs: 50, drafts: false } } },
        { channels: [channel] },
      );
      await expect.poll(() => channel.health.state, { timeout: 15_000 }).toBe('connected');
      const vera = fake.addUser({ id: 4242, firstName: 'Vera' });
      botApi.sendText({ chatId: 4242, text: 'hello bot', from: { id: 4242, first_name: 'Vera' } });
      await botApi.waitForMessages(1, { chatId: 4242 });
      fake.incoming(vera.id, { media: contactMedia(vera.id, '+380671234567', 'Vera') });
      await fake.waitForSent(1, { chatId: vera.id });
      const viaBot = await palaver.store.sessions.findByConversation('telegram-bot', '4242');
      const viaAccount = await palaver.store.sessions.findByConversation('telegram-user', '4242');
      expect(viaBot).toBeDefined();
      expect(viaAccount).toBeDefined();
      expect(viaAccount!.id).not.toBe(viaBot!.id);
      expect(viaAccount!.userId).toBe(viaBot!.userId);
      // The phone shared with the user account is the bot user's phone too.
      expect((await palaver.store.users.findById(viaBot!.userId))?.phone).toBe('380671234567');
    } finally {
      await harness.close();
      harness = undefined;
      await botApi.close();
    }
  });
});
