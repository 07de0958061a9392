import { TELEGRAM_REACTION_EMOJI } from '../../channels/telegram/reactions.js';
import type { Failure } from './faults.js';
import type { FakeTelegramState } from './state.js';
import type { FakeEdit, FakeInlineKeyboard, FakeSentMessage } from './types.js';

const ENTITY_TYPES = new Set([
  'mention',
  'hashtag',
  'cashtag',
  'bot_command',
  'url',
  'email',
  'phone_number',
  'bold',
  'italic',
  'underline',
  'strikethrough',
  'spoiler',
  'blockquote',
  'expandable_blockquote',
  'code',
  'pre',
  'text_link',
  'text_mention',
  'custom_emoji',
  'date_time',
]);
const MAX_TEXT = 4096;

/** Answers one Bot API method as Telegram would; returns the result, or a failure. */
export async function answerMethod(
  state: FakeTelegramState,
  method: string,
  params: Record<string, unknown>,
  signal: AbortSignal,
): Promise<{ result: unknown } | Failure> {
  const { bot, commands, connections, updates, files } = state;
  switch (method) {
    case 'getMe':
      return { result: { ...bot, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } };
    case 'getUpdates':
      return getUpdates(state, params, signal);
    case 'deleteWebhook':
      state.webhook = undefined;
      if (params['drop_pending_updates']) state.confirmedOffset = state.nextUpdateId;
      return { result: true };
    case 'setWebhook':
      state.webhook = { url: String(params['url']), secretToken: params['secret_token'] === undefined ? undefined : String(params['secret_token']) };
      state.pendingPoll?.conflict();
      return { result: true };
    case 'getWebhookInfo':
      return { result: { url: state.webhook?.url ?? '', has_custom_certificate: false, pending_update_count: 0 } };
    case 'setMyCommands':
      commands.set(String(params['language_code'] ?? ''), (params['commands'] as { command: string; description: string }[]) ?? []);
      return { result: true };
    case 'getMyCommands':
      return { result: commands.get(String(params['language_code'] ?? '')) ?? [] };
    case 'setMyDescription':
    case 'setMyShortDescription':
    case 'sendChatAction':
      return { result: true };
    case 'setMessageReaction':
      return setMessageReaction(state, params);
    case 'readBusinessMessage':
    case 'getBusinessConnection': {
      const id = String(params['business_connection_id']);
      const connection = connections.get(id);
      if (!connection) return { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_INVALID' };
      if (method === 'readBusinessMessage')
        return connection.enabled ? { result: true } : { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_NOT_ALLOWED' };
      const update = [...updates].reverse().find((u) => (u['business_connection'] as { id?: string } | undefined)?.id === id);
      return { result: update?.['business_connection'] };
    }
    case 'sendMessageDraft': {
      const text = String(params['text'] ?? '');
      if (text.length > MAX_TEXT) return { code: 400, description: 'Bad Request: text is too long' };
      const problem = entityProblem(text, params['entities']);
      if (problem) return { code: 400, description: `Bad Request: can't parse entities: ${problem}` };
      return { result: true };
    }
    case 'sendMessage':
      return sendMessage(state, params);
    case 'answerCallbackQuery': {
      const text = params['text'];
      if (typeof params['callback_query_id'] !== 'string' || params['callback_query_id'] === '')
        return { code: 400, description: 'Bad Request: query is too old and response timeout expired or query ID is invalid' };
      if (typeof text === 'string' && text.length > 200) return { code: 400, description: 'Bad Request: MESSAGE_TOO_LONG' };
      return { result: true };
    }
    case 'editMessageText':
    case 'editMessageReplyMarkup':
      return editMessage(state, method, params);
    case 'getFile': {
      const file = files.get(String(params['file_id']));
      if (!file) return { code: 400, description: 'Bad Request: invalid file_id' };
      return {
        result: { file_id: params['file_id'], file_unique_id: `u${String(params['file_id'])}`, file_size: file.bytes.byteLength, file_path: file.path },
      };
    }
    default:
      return { code: 404, description: 'Not Found' };
  }
}

function sendMessage(state: FakeTelegramState, params: Record<string, unknown>): { result: unknown } | Failure {
  const { bot, connections, events, nextMessageId, sent } = state;
  const chatId = Number(params['chat_id']);
  const text = typeof params['text'] === 'string' ? params['text'] : '';
  if (!Number.isFinite(chatId)) return { code: 400, description: 'Bad Request: chat not found' };
  if (text.trim() === '') return { code: 400, description: 'Bad Request: message text is empty' };
  if (text.length > MAX_TEXT) return { code: 400, description: 'Bad Request: message is too long' };
  if (params['parse_mode'] !== undefined && params['entities'] !== undefined)
    return { code: 400, description: "Bad Request: can't parse entities: both parse_mode and entities given" };
  const problem = entityProblem(text, params['entities']);
  if (problem) return { code: 400, description: `Bad Request: can't parse entities: ${problem}` };
  const connectionId = params['business_connection_id'] === undefined ? undefined : String(params['business_connection_id']);
  if (connectionId !== undefined && !connections.get(connectionId)?.enabled) return { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_INVALID' };
  const reply = params['reply_parameters'] as { message_id?: number; allow_sending_without_reply?: boolean } | undefined;
  // Telegram refuses a quote of a message that is not in the chat, unless told to send without it.
  const quotes = reply?.message_id !== undefined && state.hasMessage(chatId, reply.message_id);
  if (reply?.message_id !== undefined && !quotes && reply.allow_sending_without_reply !== true)
    return { code: 400, description: 'Bad Request: message to be replied not found' };
  const markup = keyboardOf(params['reply_markup']);
  if (typeof markup === 'string') return { code: 400, description: `Bad Request: ${markup}` };
  const message: FakeSentMessage = {
    messageId: state.messageIdFor(chatId, nextMessageId.get(chatId) ?? state.firstId),
    chatId,
    text,
    entities: params['entities'] as FakeSentMessage['entities'],
    parseMode: params['parse_mode'] === undefined ? undefined : String(params['parse_mode']),
    businessConnectionId: connectionId,
    threadId: params['message_thread_id'] === undefined ? undefined : Number(params['message_thread_id']),
    replyToMessageId: quotes ? reply?.message_id : undefined,
    replyMarkup: markup,
    at: Date.now(),
  };
  sent.push(message);
  events.emit('sent');
  return {
    result: {
      message_id: message.messageId,
      date: Math.floor(message.at / 1000),
      chat: { id: chatId, type: chatId < 0 ? 'supergroup' : 'private' },
      from: bot,
      text,
      ...(message.entities ? { entities: message.entities } : {}),
      ...(connectionId ? { business_connection_id: connectionId } : {}),
    },
  };
}

/**
 * An edit of a message the bot sent, checked as Telegram checks it: the message must be the bot's in that chat, a
 * business message is edited only through its connection, and an edit that changes nothing is refused. A keyboard
 * left out is removed.
 */
function editMessage(state: FakeTelegramState, method: string, params: Record<string, unknown>): { result: unknown } | Failure {
  const chatId = Number(params['chat_id']);
  const messageId = Number(params['message_id']);
  const original = state.sent.find((message) => message.chatId === chatId && message.messageId === messageId);
  const connectionId = params['business_connection_id'] === undefined ? undefined : String(params['business_connection_id']);
  if (!original || original.businessConnectionId !== connectionId) return { code: 400, description: 'Bad Request: message to edit not found' };
  const markup = keyboardOf(params['reply_markup']);
  if (typeof markup === 'string') return { code: 400, description: `Bad Request: ${markup}` };
  const before = [...state.edits].reverse().find((edit) => edit.chatId === chatId && edit.messageId === messageId);
  const currentText =
    [...state.edits].reverse().find((edit) => edit.chatId === chatId && edit.messageId === messageId && edit.text !== undefined)?.text ?? original.text;
  const currentMarkup = before ? before.replyMarkup : original.replyMarkup;
  let text: string | undefined;
  let entities: FakeEdit['entities'];
  if (method === 'editMessageText') {
    text = typeof params['text'] === 'string' ? params['text'] : '';
    if (text.trim() === '') return { code: 400, description: 'Bad Request: message text is empty' };
    if (text.length > MAX_TEXT) return { code: 400, description: 'Bad Request: MESSAGE_TOO_LONG' };
    const problem = entityProblem(text, params['entities']);
    if (problem) return { code: 400, description: `Bad Request: can't parse entities: ${problem}` };
    entities = params['entities'] as FakeEdit['entities'];
  }
  if ((text === undefined || text === currentText) && JSON.stringify(markup) === JSON.stringify(currentMarkup))
    return { code: 400, description: 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same' };
  const edit: FakeEdit = {
    method: method as FakeEdit['method'],
    chatId,
    messageId,
    text,
    entities,
    replyMarkup: markup,
    businessConnectionId: connectionId,
    at: Date.now(),
  };
  state.edits.push(edit);
  state.events.emit('edit');
  return {
    result: {
      message_id: messageId,
      date: Math.floor(original.at / 1000),
      edit_date: Math.floor(edit.at / 1000),
      chat: { id: chatId, type: chatId < 0 ? 'supergroup' : 'private' },
      from: state.bot,
      text: text ?? currentText,
      ...(markup ? { reply_markup: markup } : {}),
      ...(connectionId ? { business_connection_id: connectionId } : {}),
    },
  };
}

/** An inline keyboard as Telegram checks it (callback data of 1–64 bytes); undefined when none; a string says what is wrong. */
function keyboardOf(raw: unknown): FakeInlineKeyboard | undefined | string {
  if (raw === undefined) return undefined;
  const markup = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { inline_keyboard?: unknown };
  if (!Array.isArray(markup.inline_keyboard)) return 'only inline keyboards are modelled by the fake';
  for (const row of markup.inline_keyboard as unknown[]) {
    if (!Array.isArray(row)) return 'field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays';
    for (const button of row as { text?: unknown; callback_data?: unknown }[]) {
      if (typeof button.text !== 'string' || button.text === '') return 'BUTTON_TEXT_INVALID';
      if (button.callback_data !== undefined) {
        const bytes = typeof button.callback_data === 'string' ? Buffer.byteLength(button.callback_data) : 0;
        if (bytes < 1 || bytes > 64) return 'BUTTON_DATA_INVALID';
      }
    }
  }
  return markup as FakeInlineKeyboard;
}

/** One emoji of Telegram's list on a message of the chat, as Telegram checks it; an empty list removes the reaction. */
function setMessageReaction(state: FakeTelegramState, params: Record<string, unknown>): { result: true } | Failure {
  const chatId = Number(params['chat_id']);
  const messageId = Number(params['message_id']);
  if (!Number.isInteger(messageId) || !state.hasMessage(chatId, messageId)) return { code: 400, description: 'Bad Request: message to react not found' };
  const reaction = (params['reaction'] ?? []) as { type?: unknown; emoji?: unknown }[];
  if (!Array.isArray(reaction) || reaction.length > 1) return { code: 400, description: 'Bad Request: REACTIONS_TOO_MANY' };
  const [first] = reaction;
  if (first !== undefined && (first.type !== 'emoji' || typeof first.emoji !== 'string' || !TELEGRAM_REACTION_EMOJI.includes(first.emoji))) {
    return { code: 400, description: 'Bad Request: REACTION_INVALID' };
  }
  state.reactions.push({ chatId, messageId, emoji: typeof first?.emoji === 'string' ? first.emoji : '', at: Date.now() });
  state.events.emit('reaction');
  return { result: true };
}

async function getUpdates(state: FakeTelegramState, params: Record<string, unknown>, signal: AbortSignal): Promise<{ result: unknown } | Failure> {
  const { events, updates } = state;
  const conflictAnswer: Failure = {
    code: 409,
    description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
  };
  if (state.conflict) return conflictAnswer;
  if (state.webhook)
    return { code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" };
  // A newer poll terminates the one still waiting, as Telegram does.
  state.pendingPoll?.conflict();
  const offset = Number(params['offset'] ?? 0);
  if (offset > 0) state.confirmedOffset = Math.max(state.confirmedOffset, offset);
  const limit = Math.min(100, Math.max(1, Number(params['limit'] ?? 100)));
  const timeoutMs = Math.max(0, Number(params['timeout'] ?? 0)) * 1000;
  const available = () => updates.filter((update) => update.update_id >= state.confirmedOffset).slice(0, limit);
  if (available().length > 0 || timeoutMs === 0) return { result: available() };
  return new Promise((resolve) => {
    let done = false;
    const finish = (value: { result: unknown } | Failure) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      events.off('update', onUpdate);
      signal.removeEventListener('abort', onAbort);
      if (state.pendingPoll === poll) state.pendingPoll = undefined;
      resolve(value);
    };
    const onUpdate = () => {
      if (available().length > 0) finish({ result: available() });
    };
    const onAbort = () => finish({ result: [] });
    const poll = { conflict: () => finish(conflictAnswer) };
    state.pendingPoll = poll;
    const timer = setTimeout(() => finish({ result: [] }), timeoutMs);
    events.on('update', onUpdate);
    signal.addEventListener('abort', onAbort);
  });
}

/** What Telegram checks of `entities`: each inside the text (UTF-16 offsets), non-empty, of a known type. */
function entityProblem(text: string, raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) return 'entities must be an array';
  for (const [index, entity] of raw.entries()) {
    const { type, offset, length } = (entity ?? {}) as { type?: unknown; offset?: unknown; length?: unknown };
    if (typeof type !== 'string' || !ENTITY_TYPES.has(type)) return `entity ${index} has an unknown type ${String(type)}`;
    if (!Number.isInteger(offset) || !Number.isInteger(length) || (offset as number) < 0 || (length as number) <= 0)
      return `entity ${index} has a bad offset or length`;
    if ((offset as number) + (length as number) > text.length)
      return `entity ${index} ends at ${(offset as number) + (length as number)}, past the text's ${text.length} UTF-16 units`;
    if (type === 'text_link' && typeof (entity as { url?: unknown }).url !== 'string') return `text_link entity ${index} has no url`;
  }
  return undefined;
}
