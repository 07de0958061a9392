import type { FakeTelegramState } from './state.js';
import type { BaseInput, FakeTelegram, FakeUser } from './types.js';

/** What people "send" to the bot, as the updates Telegram would make of it. */
export type PeopleActions = Pick<
  FakeTelegram,
  | 'sendText'
  | 'sendPhoto'
  | 'sendSticker'
  | 'sendContact'
  | 'sendVoice'
  | 'sendGroupText'
  | 'businessConnection'
  | 'businessMessage'
  | 'pressButton'
  | 'enqueue'
>;

export function peopleActions(state: FakeTelegramState): PeopleActions {
  const { bot } = state;
  const enqueue: PeopleActions['enqueue'] = (update) => state.enqueue(update);

  function baseMessage(input: BaseInput, chat: Record<string, unknown>): Record<string, unknown> {
    const from = input.from ?? { id: input.chatId, is_bot: false, first_name: `User${input.chatId}`, language_code: 'en' };
    const message: Record<string, unknown> = {
      message_id: state.messageIdFor(input.chatId, input.messageId),
      date: Math.floor(Date.now() / 1000),
      chat,
      from: { is_bot: false, ...from },
    };
    if (input.threadId !== undefined) {
      message['message_thread_id'] = input.threadId;
      message['is_topic_message'] = true;
    }
    if (input.replyTo) {
      message['reply_to_message'] = {
        message_id: input.replyTo.messageId,
        date: Math.floor(Date.now() / 1000) - 60,
        chat,
        from: input.replyTo.from ?? bot,
        text: input.replyTo.text,
      };
    }
    return message;
  }

  const privateChat = (input: BaseInput): Record<string, unknown> => ({
    id: input.chatId,
    type: 'private',
    first_name: input.from?.first_name ?? `User${input.chatId}`,
  });

  return {
    sendText: (input) => enqueue({ message: { ...baseMessage(input, privateChat(input)), text: input.text, ...withEntities(commandEntities(input.text)) } }),
    sendPhoto: (input) =>
      enqueue({
        message: {
          ...baseMessage(input, privateChat(input)),
          photo: [
            { file_id: 'photo-small', file_unique_id: 'ps', width: 90, height: 90 },
            { file_id: 'photo-big', file_unique_id: 'pb', width: 1280, height: 1280 },
          ],
          ...(input.caption === undefined ? {} : { caption: input.caption }),
        },
      }),
    sendSticker: (input) =>
      enqueue({
        message: {
          ...baseMessage(input, privateChat(input)),
          sticker: {
            file_id: 'sticker',
            file_unique_id: 'st',
            type: 'regular',
            width: 512,
            height: 512,
            is_animated: false,
            is_video: false,
            emoji: input.emoji ?? '😀',
          },
        },
      }),
    sendContact: (input) => {
      const message = baseMessage(input, privateChat(input));
      const from = message['from'] as FakeUser;
      return enqueue({
        message: {
          ...message,
          contact: { phone_number: input.phoneNumber, first_name: input.firstName ?? from.first_name, user_id: input.contactUserId ?? from.id },
        },
      });
    },
    sendVoice: (input) => {
      const file = state.addFile(input.audio, input.mimeType ?? 'audio/ogg', 'oga');
      return enqueue({
        message: { ...baseMessage(input, privateChat(input)), voice: { ...file, duration: input.duration ?? 2, mime_type: input.mimeType ?? 'audio/ogg' } },
      });
    },
    sendGroupText: (input) => {
      const chat = {
        id: input.chatId,
        type: input.chatType ?? 'supergroup',
        title: `Group ${input.chatId}`,
        ...(input.threadId === undefined ? {} : { is_forum: true }),
      };
      const prefix = input.mention ? `@${bot.username} ` : '';
      const text = `${prefix}${input.text}`;
      const entities = [...(input.mention ? [{ type: 'mention', offset: 0, length: bot.username.length + 1 }] : []), ...commandEntities(text)];
      return enqueue({
        message: {
          ...baseMessage({ ...input, from: input.from ?? { id: 5001, first_name: 'Member', language_code: 'en' } }, chat),
          text,
          ...withEntities(entities),
        },
      });
    },
    businessConnection: (input) => {
      state.connections.set(input.id, { enabled: input.enabled ?? true });
      return enqueue({
        business_connection: {
          id: input.id,
          user: { is_bot: false, ...input.owner },
          user_chat_id: input.userChatId ?? input.owner.id,
          date: Math.floor(Date.now() / 1000),
          rights: input.rights ?? { can_reply: true, can_read_messages: true },
          is_enabled: input.enabled ?? true,
        },
      });
    },
    businessMessage: (input) =>
      enqueue({
        business_message: {
          ...baseMessage(input, privateChat(input)),
          text: input.text,
          ...withEntities(commandEntities(input.text)),
          business_connection_id: input.connectionId,
        },
      }),
    pressButton: ({ message, from, data }) => {
      const presser = from ?? { id: message.chatId, first_name: `User${message.chatId}`, language_code: 'en' };
      // The message as it reads now: its last accepted edit's text, else as sent.
      const edited = [...state.edits]
        .reverse()
        .find((edit) => edit.chatId === message.chatId && edit.messageId === message.messageId && edit.text !== undefined);
      return enqueue({
        callback_query: {
          id: state.callbackQueryId(),
          from: { is_bot: false, ...presser },
          chat_instance: `instance-${message.chatId}`,
          data: data ?? message.replyMarkup?.inline_keyboard[0]?.[0]?.callback_data,
          message: {
            message_id: message.messageId,
            date: Math.floor(message.at / 1000),
            chat:
              message.chatId < 0
                ? { id: message.chatId, type: 'supergroup', title: `Group ${message.chatId}` }
                : { id: message.chatId, type: 'private', first_name: `User${message.chatId}` },
            from: bot,
            text: edited?.text ?? message.text,
            ...((edited?.entities ?? message.entities) ? { entities: edited?.entities ?? message.entities } : {}),
            ...(message.replyMarkup ? { reply_markup: message.replyMarkup } : {}),
            ...(message.businessConnectionId ? { business_connection_id: message.businessConnectionId } : {}),
          },
        },
      });
    },
    enqueue,
  };
}

/** The `bot_command` entity Telegram adds to a text that starts with `/command` (or `/command@bot`). */
function commandEntities(text: string): { type: string; offset: number; length: number }[] {
  const match = /^\/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,})?/.exec(text);
  return match ? [{ type: 'bot_command', offset: 0, length: match[0].length }] : [];
}

function withEntities(entities: readonly { type: string; offset: number; length: number }[]): {
  entities?: readonly { type: string; offset: number; length: number }[];
} {
  return entities.length > 0 ? { entities } : {};
}
