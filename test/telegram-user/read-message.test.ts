import { Long, type Message } from '@mtcute/core';
import { describe, expect, it } from 'vitest';
import { readMessage } from '../../src/channels/telegram-user/read-message.js';
import { AUDIO_PLACEHOLDER } from '../../src/channels/telegram/index.js';
import { contactMedia, documentMedia, photoMedia, privateMessage, roundVideoMedia, serviceMessage, tlUser, voiceMedia } from './tl-messages.js';

const vera = tlUser(42, { firstName: 'Vera', lastName: 'K' });

/** Answers `getReplyTo` with the given messages by id, as the client fetches them. */
function repliesFrom(...messages: Message[]) {
  const asked: number[] = [];
  return {
    asked,
    async getReplyTo(message: Message): Promise<Message | null> {
      const id = message.replyToMessage?.id;
      if (id == null) return null;
      asked.push(id);
      return messages.find((m) => m.id === id) ?? null;
    },
  };
}

describe('telegram user account: reading a message for the model', () => {
  it('reads text as it is', async () => {
    expect(await readMessage(privateMessage(vera, { message: 'Can I book for Friday?' }))).toEqual({ text: 'Can I book for Friday?' });
  });

  it("describes media in the bot channel's words, caption after the description", async () => {
    expect((await readMessage(privateMessage(vera, { message: 'my cat', media: photoMedia() })))?.text).toBe('[photo] my cat');
    expect((await readMessage(privateMessage(vera, { media: photoMedia() })))?.text).toBe('[photo]');
    const pdf = documentMedia('application/pdf', [{ _: 'documentAttributeFilename', fileName: 'invoice.pdf' }]);
    expect((await readMessage(privateMessage(vera, { media: pdf })))?.text).toBe('[document: invoice.pdf]');
    const sticker = documentMedia('image/webp', [
      { _: 'documentAttributeSticker', alt: '😀', stickerset: { _: 'inputStickerSetEmpty' } },
      { _: 'documentAttributeImageSize', w: 512, h: 512 },
    ]);
    expect((await readMessage(privateMessage(vera, { media: sticker })))?.text).toBe('[sticker 😀]');
    const gif = documentMedia('video/mp4', [{ _: 'documentAttributeVideo', duration: 2, w: 320, h: 240 }, { _: 'documentAttributeAnimated' }]);
    expect((await readMessage(privateMessage(vera, { media: gif })))?.text).toBe('[GIF]');
    const geo = { _: 'messageMediaGeo' as const, geo: { _: 'geoPoint' as const, lat: 55.75, long: 37.62, accessHash: Long.ZERO } };
    expect((await readMessage(privateMessage(vera, { media: geo })))?.text).toBe('[location: 55.75, 37.62]');
  });

  it('leaves nothing to read in a service message or an empty one', async () => {
    expect(await readMessage(serviceMessage(vera))).toBeUndefined();
    expect(await readMessage(privateMessage(vera, { message: '   ' }))).toBeUndefined();
  });

  it('marks voice and round video for transcription, the caption kept after it', async () => {
    const voice = await readMessage(privateMessage(vera, { media: voiceMedia(4), message: 'listen' }));
    expect(voice?.text).toBe(`${AUDIO_PLACEHOLDER}\n\nlisten`);
    expect(voice?.audio?.media).toEqual({ kind: 'voice', mimeType: 'audio/ogg', fileSize: 4 });
    const round = await readMessage(privateMessage(vera, { media: roundVideoMedia() }));
    expect(round?.text).toBe(AUDIO_PLACEHOLDER);
    expect(round?.audio?.media).toEqual({ kind: 'video_note', fileSize: 4 });
  });

  it('hands over the phone of a contact the person shares of themselves, and only that one', async () => {
    const own = await readMessage(privateMessage(vera, { media: contactMedia(42, '79991234567', 'Vera', 'K') }));
    expect(own).toEqual({ text: '[contact: Vera K, 79991234567]', phone: '79991234567' });
    const friend = await readMessage(privateMessage(vera, { media: contactMedia(77, '+44 20 7946 0958', 'Ivan') }));
    expect(friend).toEqual({ text: '[contact: Ivan, +44 20 7946 0958]' });
    // A card of someone who is not on Telegram (user id 0) is not the sender's either.
    expect((await readMessage(privateMessage(vera, { media: contactMedia(0, '111', 'Nobody') })))?.phone).toBeUndefined();
  });

  it('quotes the message a reply answers, fetched through the client, as the bot quotes it', async () => {
    const earlier = privateMessage(vera, { id: 5, message: 'Friday 10:00 is free.\nShall I book it?' }, { outgoing: true });
    const replies = repliesFrom(earlier);
    const reply = privateMessage(vera, { id: 6, message: 'Yes please', replyTo: { _: 'messageReplyHeader', replyToMsgId: 5 } });
    expect((await readMessage(reply, replies))?.text).toBe('> Friday 10:00 is free.\n> Shall I book it?\n\nYes please');
    expect(replies.asked).toEqual([5]);
    // A reply to a photo quotes its description and caption.
    const photo = privateMessage(vera, { id: 8, media: photoMedia(), message: 'this one' });
    const toPhoto = privateMessage(vera, { id: 9, message: 'nice', replyTo: { _: 'messageReplyHeader', replyToMsgId: 8 } });
    expect((await readMessage(toPhoto, repliesFrom(photo)))?.text).toBe('> [photo] this one\n\nnice');
  });

  it('quotes only the part the person selected, without fetching anything', async () => {
    const replies = repliesFrom();
    const reply = privateMessage(vera, { message: 'that part', replyTo: { _: 'messageReplyHeader', replyToMsgId: 5, quote: true, quoteText: '10:00' } });
    expect((await readMessage(reply, replies))?.text).toBe('> 10:00\n\nthat part');
    expect(replies.asked).toEqual([]);
  });

  it('reads a reply without its quote when the replied-to message cannot be fetched', async () => {
    const errors: unknown[] = [];
    const failing = { getReplyTo: () => Promise.reject(new Error('MESSAGE_ID_INVALID')) };
    const reply = privateMessage(vera, { message: 'and?', replyTo: { _: 'messageReplyHeader', replyToMsgId: 5 } });
    expect((await readMessage(reply, failing, (error) => errors.push(error)))?.text).toBe('and?');
    expect(errors).toHaveLength(1);
  });

  it('cuts a long quote at 1000 characters', async () => {
    const earlier = privateMessage(vera, { id: 5, message: 'x'.repeat(1500) });
    const reply = privateMessage(vera, { id: 6, message: 'ok', replyTo: { _: 'messageReplyHeader', replyToMsgId: 5 } });
    expect((await readMessage(reply, repliesFrom(earlier)))?.text).toBe(`> ${'x'.repeat(1000)}…\n\nok`);
  });
});
