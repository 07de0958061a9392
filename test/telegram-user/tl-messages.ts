import { Long, Message, PeersIndex, type tl } from '@mtcute/core';

/** The signed-in account in these tests. */
export const SELF_ID = 100;
export const self: tl.RawUser = { _: 'user', id: SELF_ID, self: true, firstName: 'Olga', accessHash: Long.ZERO };

/** A Telegram user as MTProto describes them (`user` TL object). */
export function tlUser(id: number, fields: Partial<tl.RawUser> = {}): tl.RawUser {
  return { _: 'user', id, firstName: `User${id}`, accessHash: Long.fromInt(id), ...fields };
}

export function tlGroup(id: number): tl.RawChat {
  return { _: 'chat', id, title: 'Family', photo: { _: 'chatPhotoEmpty' }, participantsCount: 3, date: 1_700_000_000, version: 1 };
}

export function tlChannel(id: number): tl.RawChannel {
  return { _: 'channel', id, title: 'News', accessHash: Long.fromInt(id), photo: { _: 'chatPhotoEmpty' }, date: 1_700_000_000, broadcast: true };
}

/** A private chat's message as mtcute hands it to `onNewMessage`: built from the TL object and its peers. */
export function privateMessage(
  person: tl.RawUser,
  fields: Partial<tl.RawMessage> = {},
  options: { readonly outgoing?: boolean; readonly users?: readonly tl.RawUser[] } = {},
): Message {
  const raw: tl.RawMessage = {
    _: 'message',
    id: 1,
    peerId: { _: 'peerUser', userId: person.id },
    ...(options.outgoing ? { out: true, fromId: { _: 'peerUser', userId: SELF_ID } } : {}),
    date: 1_700_000_000,
    message: '',
    ...fields,
  };
  return new Message(raw, PeersIndex.from({ users: [self, person, ...(options.users ?? [])] }));
}

/** A service message (a call, a screenshot notice) in a private chat. */
export function serviceMessage(person: tl.RawUser, id = 1): Message {
  const raw: tl.RawMessageService = {
    _: 'messageService',
    id,
    peerId: { _: 'peerUser', userId: person.id },
    date: 1_700_000_000,
    action: { _: 'messageActionScreenshotTaken' },
  };
  return new Message(raw, PeersIndex.from({ users: [self, person] }));
}

/** A message in a basic group, from `person`. */
export function groupMessage(person: tl.RawUser, group: tl.RawChat, text: string): Message {
  const raw: tl.RawMessage = {
    _: 'message',
    id: 1,
    peerId: { _: 'peerChat', chatId: group.id },
    fromId: { _: 'peerUser', userId: person.id },
    date: 1_700_000_000,
    message: text,
  };
  return new Message(raw, PeersIndex.from({ users: [self, person], chats: [group] }));
}

/** A post in a broadcast channel. */
export function channelPost(channel: tl.RawChannel, text: string): Message {
  const raw: tl.RawMessage = { _: 'message', id: 1, peerId: { _: 'peerChannel', channelId: channel.id }, post: true, date: 1_700_000_000, message: text };
  return new Message(raw, PeersIndex.from({ users: [self], chats: [channel] }));
}

/** A document with attributes (voice, video, file name …), as `messageMediaDocument`. */
export function documentMedia(mimeType: string, attributes: tl.TypeDocumentAttribute[], size = 4): tl.RawMessageMediaDocument {
  return {
    _: 'messageMediaDocument',
    document: {
      _: 'document',
      id: Long.fromInt(9),
      accessHash: Long.fromInt(9),
      fileReference: new Uint8Array([1]),
      date: 1_700_000_000,
      mimeType,
      size,
      dcId: 2,
      attributes,
    },
  };
}

export const voiceMedia = (size = 4): tl.RawMessageMediaDocument =>
  documentMedia('audio/ogg', [{ _: 'documentAttributeAudio', voice: true, duration: 3 }], size);
export const roundVideoMedia = (): tl.RawMessageMediaDocument =>
  documentMedia('video/mp4', [{ _: 'documentAttributeVideo', roundMessage: true, duration: 5, w: 240, h: 240 }]);

export const photoMedia = (): tl.RawMessageMediaPhoto => ({
  _: 'messageMediaPhoto',
  photo: {
    _: 'photo',
    id: Long.fromInt(5),
    accessHash: Long.fromInt(5),
    fileReference: new Uint8Array([1]),
    date: 1_700_000_000,
    sizes: [{ _: 'photoSize', type: 'x', w: 800, h: 600, size: 1000 }],
    dcId: 2,
  },
});

export function contactMedia(userId: number, phone: string, firstName = 'Vera', lastName = ''): tl.RawMessageMediaContact {
  return { _: 'messageMediaContact', phoneNumber: phone, firstName, lastName, vcard: '', userId };
}
