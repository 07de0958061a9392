import type { FileDownloadLocation, Message } from '@mtcute/core';
import { describe, expect, it } from 'vitest';
import { AnswerPolicy, type AnswerSetting } from '../../src/channels/telegram-user/answer-policy.js';
import { TelegramUserInbound } from '../../src/channels/telegram-user/inbound.js';
import { OwnSends } from '../../src/channels/telegram-user/own-sends.js';
import { OwnerTakeover } from '../../src/channels/telegram-user/owner-takeover.js';
import { ChannelError } from '../../src/domain/errors.js';
import { FakeChannelContext } from '../channels/fake-pipeline.js';
import { contactMedia, groupMessage, privateMessage, roundVideoMedia, tlGroup, tlUser, voiceMedia } from './tl-messages.js';

const MINUTE = 60_000;
const vera = tlUser(42, { firstName: 'Vera', lastName: 'K', username: 'vera_k' });

interface Setup {
  readonly inbound: TelegramUserInbound;
  readonly context: FakeChannelContext;
  readonly ownSends: OwnSends;
  readonly clock: { now: number };
  readonly downloads: FileDownloadLocation[];
  readonly transcriptions: { bytes: number; filename: string; mimeType: string }[];
}

async function setup(options: { answer?: AnswerSetting; transcript?: string | Error; noTranscriber?: boolean } = {}): Promise<Setup> {
  const context = new FakeChannelContext();
  const clock = { now: Date.UTC(2023, 10, 14, 22, 13, 20) };
  const now = () => clock.now;
  const ownSends = new OwnSends({ state: context.state, now });
  const takeover = await OwnerTakeover.load({ state: context.state, windowMs: 30 * MINUTE, now });
  const downloads: FileDownloadLocation[] = [];
  const transcriptions: Setup['transcriptions'] = [];
  const client = {
    getReplyTo: async (): Promise<Message | null> => null,
    downloadAsBuffer: async (location: FileDownloadLocation) => {
      downloads.push(location);
      return new Uint8Array([1, 2, 3, 4]);
    },
  };
  const inbound = new TelegramUserInbound({
    context,
    client,
    policy: new AnswerPolicy(options.answer),
    ownSends,
    takeover,
    ...(options.noTranscriber
      ? {}
      : {
          transcribe: async (audio: Uint8Array, o: { filename: string; mimeType: string }) => {
            transcriptions.push({ bytes: audio.byteLength, filename: o.filename, mimeType: o.mimeType });
            if (options.transcript instanceof Error) throw options.transcript;
            return options.transcript ?? 'book me for Friday';
          },
        }),
  });
  return { inbound, context, ownSends, clock, downloads, transcriptions };
}

describe('telegram user account: inbound messages', () => {
  it("hands a private message to the pipeline under the person's Telegram id, deduplicated by chat and message id", async () => {
    const { inbound, context } = await setup();
    const outcome = await inbound.handle(privateMessage(vera, { id: 17, message: 'Hi! Do you have time on Friday?' }));
    expect(outcome.kind).toBe('accepted');
    expect(context.received.map((r) => r.message)).toEqual([
      {
        channel: 'telegram-user',
        accountId: '42',
        displayName: 'Vera K',
        conversationId: '42',
        text: 'Hi! Do you have time on Friday?',
        messageId: '17',
        dedupeKey: 'telegram-user:42:17',
        conversationKind: 'direct',
      },
    ]);
  });

  it("stores and answers nothing from a group, a bot, Telegram's 777000 or someone left out by the answer setting", async () => {
    const { inbound, context } = await setup({ answer: 'contacts' });
    expect(await inbound.handle(groupMessage(vera, tlGroup(500), 'hi all'))).toEqual({ kind: 'ignored', reason: 'not_private' });
    expect(await inbound.handle(privateMessage(tlUser(7, { bot: true }), { message: 'hi' }))).toEqual({ kind: 'ignored', reason: 'bot' });
    expect(await inbound.handle(privateMessage(tlUser(777000), { message: 'Login code: 12345' }))).toEqual({ kind: 'ignored', reason: 'telegram_service' });
    expect(await inbound.handle(privateMessage(vera, { message: 'hi' }))).toEqual({ kind: 'ignored', reason: 'not_contact' });
    expect(context.received).toHaveLength(0);
    expect(context.recorded).toHaveLength(0);
  });

  it("hands over the phone of the person's own contact card, and only text for someone else's", async () => {
    const { inbound, context } = await setup();
    await inbound.handle(privateMessage(vera, { id: 1, media: contactMedia(42, '79991234567', 'Vera', 'K') }));
    await inbound.handle(privateMessage(vera, { id: 2, media: contactMedia(99, '79990000000', 'Ivan') }));
    expect(context.received[0]!.message).toMatchObject({ text: '[contact: Vera K, 79991234567]', phone: '79991234567' });
    expect(context.received[1]!.message.text).toBe('[contact: Ivan, 79990000000]');
    expect(context.received[1]!.message.phone).toBeUndefined();
  });

  it('transcribes voice and round video downloaded through the client', async () => {
    const { inbound, context, downloads, transcriptions } = await setup();
    await inbound.handle(privateMessage(vera, { id: 3, media: voiceMedia(4), message: 'see above' }));
    await inbound.handle(privateMessage(vera, { id: 4, media: roundVideoMedia() }));
    expect(context.received.map((r) => r.message.text)).toEqual(['book me for Friday\n\nsee above', 'book me for Friday']);
    expect(downloads).toHaveLength(2);
    expect(transcriptions).toEqual([
      { bytes: 4, filename: 'voice.ogg', mimeType: 'audio/ogg' },
      { bytes: 4, filename: 'video.mp4', mimeType: 'video/mp4' },
    ]);
  });

  it('hands the model an undescribed voice message when transcription fails or is off, and sends nothing itself', async () => {
    for (const options of [{ transcript: new Error('transcriber down') }, { noTranscriber: true }, { transcript: '   ' }]) {
      const { inbound, context } = await setup(options);
      expect((await inbound.handle(privateMessage(vera, { media: voiceMedia() })))?.kind).toBe('accepted');
      expect(context.received[0]!.message.text).toBe('[voice message]');
    }
  });

  it('does not transcribe audio over the size limit', async () => {
    const { inbound, context, downloads } = await setup();
    await inbound.handle(privateMessage(vera, { media: voiceMedia(30 * 1024 * 1024) }));
    expect(downloads).toHaveLength(0);
    expect(context.received[0]!.message.text).toBe('[voice message]');
  });

  it("logs a refusal from the pipeline and sends nothing (a person's account does not answer with canned notices)", async () => {
    const { inbound, context } = await setup();
    context.refuseNext(new ChannelError('busy', 'telegram-user', 'too many waiting'));
    expect(await inbound.handle(privateMessage(vera, { message: 'hello?' }))).toEqual({ kind: 'refused', code: 'busy' });
    context.refuseNext(new Error('database is locked'));
    await expect(inbound.handle(privateMessage(vera, { id: 2, message: 'hello?' }))).rejects.toThrow('database is locked');
  });

  it("ignores the echo of a message it sent, by id or, after a restart, by the pending send's text", async () => {
    const { inbound, context, ownSends } = await setup();
    await ownSends.willSend('42', 'delivery-1', 'Friday at 10 is free.');
    await ownSends.sent('42', 'delivery-1', 50);
    expect(await inbound.handle(privateMessage(vera, { id: 50, message: 'Friday at 10 is free.' }, { outgoing: true }))).toEqual({
      kind: 'ignored',
      reason: 'own_send',
    });
    await ownSends.willSend('42', 'delivery-2', 'Booked!');
    expect(await inbound.handle(privateMessage(vera, { id: 51, message: 'Booked!' }, { outgoing: true }))).toEqual({ kind: 'ignored', reason: 'own_send' });
    expect(context.recorded).toHaveLength(0);
  });

  it("stores the owner's hand-typed message as the account's side, then holds the person's messages until the window ends", async () => {
    const { inbound, context, clock } = await setup();
    const owner = await inbound.handle(
      privateMessage(vera, { id: 60, message: "Hi Vera, it's Olga herself. Friday is fine.", date: clock.now / 1000 }, { outgoing: true }),
    );
    expect(owner).toMatchObject({ kind: 'owner', conversationId: '42', messageId: '60' });
    clock.now += 5 * MINUTE;
    const held = await inbound.handle(privateMessage(vera, { id: 61, message: 'Great, thank you!' }));
    expect(held).toMatchObject({ kind: 'held', conversationId: '42', messageId: '61' });
    expect(context.received).toHaveLength(0);
    expect(context.recorded.map(({ conversation, message }) => ({ conversation, message }))).toEqual([
      {
        conversation: { accountId: '42', displayName: 'Vera K', conversationId: '42', conversationKind: 'direct' },
        message: {
          role: 'assistant',
          text: "Hi Vera, it's Olga herself. Friday is fine.",
          messageId: '60',
          at: new Date(clock.now - 5 * MINUTE),
          source: 'owner',
        },
      },
      {
        conversation: { accountId: '42', displayName: 'Vera K', conversationId: '42', conversationKind: 'direct' },
        message: { role: 'user', text: 'Great, thank you!', messageId: '61', at: new Date(1_700_000_000_000), source: 'held' },
      },
    ]);
    // Another chat is not affected.
    expect((await inbound.handle(privateMessage(tlUser(43), { id: 62, message: 'hello' }))).kind).toBe('accepted');
    clock.now += 26 * MINUTE;
    expect((await inbound.handle(privateMessage(vera, { id: 63, message: 'One more question' }))).kind).toBe('accepted');
  });

  it("describes the owner's voice message without transcribing it, and ignores the owner writing to a bot or a group", async () => {
    const { inbound, context, transcriptions } = await setup();
    await inbound.handle(privateMessage(vera, { id: 70, media: voiceMedia(), date: 1_700_000_000 }, { outgoing: true }));
    expect(context.recorded[0]!.message).toMatchObject({ role: 'assistant', text: '[voice message]', source: 'owner' });
    expect(transcriptions).toHaveLength(0);
    expect(await inbound.handle(privateMessage(tlUser(7, { bot: true }), { message: '/start' }, { outgoing: true }))).toEqual({
      kind: 'ignored',
      reason: 'bot',
    });
    expect(context.recorded).toHaveLength(1);
  });
});
