import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Telegram Bot API server for tests: real HTTP on loopback, `/bot<token>/<method>` and
 * `/file/bot<token>/<path>`, answering like Telegram does (`{ ok, result }` or `{ ok: false, error_code,
 * description, parameters }`). One bot token per server. It keeps the updates people "send" (helpers below) for
 * `getUpdates` or pushes them to a registered webhook, records every call the bot makes, validates what Telegram
 * validates (text length, entity offsets), and can be told to fail once (429 with retry_after, 400 "can't parse
 * entities"), to answer every poll with 409 Conflict, or to carry out a call and then lose or hold back its answer
 * (the connection dropped after Telegram committed the call: the bot cannot tell whether it happened).
 *
 * Everything waits on events, not sleeps: `waitForMessages`, `waitForCall`.
 *
 * @example
 * const telegram = await startFakeTelegram();
 * // channels.telegram: { token: telegram.token, apiRoot: telegram.apiRoot }
 * telegram.sendText({ chatId: 42, text: 'hello' });
 * const [reply] = await telegram.waitForMessages(1, { chatId: 42 });
 */
export interface FakeTelegram {
  /** `http://127.0.0.1:PORT`: the Bot API root (`channels.telegram.apiRoot`, TELEGRAM_API_ROOT). */
  readonly apiRoot: string;
  readonly token: string;
  /** The bot as getMe answers. */
  readonly bot: FakeUser & { readonly username: string; readonly is_bot: true };
  /** Every call the bot made, oldest first (getUpdates included). */
  readonly calls: FakeCall[];
  /** Messages the bot sent (sendMessage), in order. */
  readonly sent: FakeSentMessage[];
  /** Updates enqueued so far (what people sent), in order. */
  readonly updates: FakeUpdate[];
  /** The registered webhook, if any. */
  readonly webhook: { url: string; secretToken: string | undefined } | undefined;
  /** Commands as setMyCommands stored them, per language code ('' for the default). */
  readonly commands: ReadonlyMap<string, readonly { command: string; description: string }[]>;

  /** A private text message from `from` (default: a user with the chat's id). Returns the update. */
  sendText(input: TextInput): FakeUpdate;
  /** A photo with a caption. */
  sendPhoto(input: BaseInput & { caption?: string }): FakeUpdate;
  /** A sticker. */
  sendSticker(input: BaseInput & { emoji?: string }): FakeUpdate;
  /** A shared contact (the sender's own by default). */
  sendContact(input: BaseInput & { phoneNumber: string; firstName?: string; contactUserId?: number }): FakeUpdate;
  /** A voice message whose audio is `audio` (served through getFile and the file route). */
  sendVoice(input: BaseInput & { audio: Uint8Array; duration?: number; mimeType?: string }): FakeUpdate;
  /** A group (or supergroup) message; `mention: true` starts it with `@<bot username>` as a mention entity. */
  sendGroupText(input: TextInput & { mention?: boolean; chatType?: 'group' | 'supergroup' }): FakeUpdate;
  /** A business connection created, changed or ended by its owner. */
  businessConnection(input: { id: string; owner: FakeUser; userChatId?: number; enabled?: boolean; rights?: Record<string, true> }): FakeUpdate;
  /** A message a customer wrote to a business account connected to the bot. */
  businessMessage(input: TextInput & { connectionId: string }): FakeUpdate;
  /** Enqueues an update as given (its `update_id` is assigned unless set); to redeliver one, pass it again. */
  enqueue(update: Omit<FakeUpdate, 'update_id'> & { update_id?: number }): FakeUpdate;

  /** The next call of `method` fails: 429 with `retryAfter` seconds, or a 400 with `description`. */
  failNext(method: string, failure: { retryAfter: number } | { code: number; description: string }): void;
  /**
   * The next call of `method` is carried out (a sendMessage reaches the chat), then its connection is cut before the
   * answer is written: the bot sees a network error for a call Telegram did make.
   */
  loseResponseNext(method: string): void;
  /**
   * The next call of `method` is carried out, and its answer is held back until the returned `release` (or `close`).
   * `applied` resolves once the call took effect: a test can kill the bot's process between the two.
   */
  holdResponseNext(method: string): { readonly applied: Promise<FakeCall>; release(): void };
  /** While on, every getUpdates answers 409 Conflict (another poller holds the token). */
  setConflict(on: boolean): void;
  /**
   * While on, calls of `method` get no answer, as from an API that cannot be reached: each is recorded and held until
   * `hang(method, false)` (then answered as usual) or until the caller gives up (then it had no effect).
   */
  hang(method: string, on?: boolean): void;
  /** Posts an update to the registered webhook as Telegram would (with its secret); resolves with the HTTP status. */
  deliverToWebhook(update: FakeUpdate, options?: { secretToken?: string | null }): Promise<number>;
  /** Resolves once at least `count` messages were sent (to `chatId` if given). */
  waitForMessages(count: number, options?: { chatId?: number; timeoutMs?: number }): Promise<FakeSentMessage[]>;
  /** Resolves with the first call (already made or coming) of `method` that `match` accepts. */
  waitForCall(method: string, match?: (call: FakeCall) => boolean, options?: { timeoutMs?: number }): Promise<FakeCall>;
  /** Calls of one method, oldest first. */
  callsOf(method: string): FakeCall[];
  /** Messages sent to one chat, oldest first. */
  sentTo(chatId: number): FakeSentMessage[];
  /** Stops listening and drops open connections (pending polls end). Safe to call twice. */
  close(): Promise<void>;
}

export interface FakeUser {
  readonly id: number;
  readonly is_bot?: boolean;
  readonly first_name: string;
  readonly username?: string;
  readonly language_code?: string;
}

export interface BaseInput {
  readonly chatId: number;
  /** Default: `{ id: chatId, first_name: 'User<chatId>' }` (a private chat's user). */
  readonly from?: FakeUser;
  /** Default: the next id of this chat. */
  readonly messageId?: number;
  /** A message this one replies to (its id and text). */
  readonly replyTo?: { messageId: number; text: string; from?: FakeUser };
  /** A forum topic of a supergroup. */
  readonly threadId?: number;
}

export interface TextInput extends BaseInput {
  readonly text: string;
}

export type FakeUpdate = { readonly update_id: number } & Record<string, unknown>;

export interface FakeCall {
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly at: number;
}

export interface FakeSentMessage {
  readonly messageId: number;
  readonly chatId: number;
  readonly text: string;
  readonly entities: readonly { type: string; offset: number; length: number }[] | undefined;
  readonly parseMode: string | undefined;
  readonly businessConnectionId: string | undefined;
  readonly threadId: number | undefined;
  readonly replyToMessageId: number | undefined;
  readonly at: number;
}

type AfterEffect =
  | { readonly kind: 'lose' }
  | { readonly kind: 'hold'; readonly applied: Promise<FakeCall>; readonly released: Promise<void>; onApplied(call: FakeCall): void; release(): void };

interface Failure {
  readonly code: number;
  readonly description: string;
  readonly parameters?: Record<string, unknown>;
}

const ENTITY_TYPES = new Set([
  'mention', 'hashtag', 'cashtag', 'bot_command', 'url', 'email', 'phone_number', 'bold', 'italic', 'underline', 'strikethrough', 'spoiler',
  'blockquote', 'expandable_blockquote', 'code', 'pre', 'text_link', 'text_mention', 'custom_emoji', 'date_time',
]);
const MAX_TEXT = 4096;

export async function startFakeTelegram(options: { token?: string; botUsername?: string; port?: number } = {}): Promise<FakeTelegram> {
  const token = options.token ?? '123456789:FAKE-telegram-token_for-tests';
  const botId = Number(token.split(':')[0]);
  const bot = { id: botId, is_bot: true as const, first_name: 'Palaver Test', username: options.botUsername ?? 'palaver_test_bot' };
  const events = new EventEmitter();
  events.setMaxListeners(0);
  const calls: FakeCall[] = [];
  const sent: FakeSentMessage[] = [];
  const updates: FakeUpdate[] = [];
  const failures = new Map<string, Failure[]>();
  /** What happens to the answer of a call already carried out, per method: cut, or held until released. */
  const afterEffects = new Map<string, AfterEffect[]>();
  const files = new Map<string, { bytes: Uint8Array; path: string; mimeType: string }>();
  const commands = new Map<string, { command: string; description: string }[]>();
  const connections = new Map<string, { enabled: boolean }>();
  const nextMessageId = new Map<number, number>();
  let nextUpdateId = 700_000_001;
  let nextFileId = 1;
  const holds = new Set<Extract<AfterEffect, { kind: 'hold' }>>();
  let confirmedOffset = 0;
  let conflict = false;
  const hanging = new Set<string>();
  let webhook: { url: string; secretToken: string | undefined } | undefined;
  /** The getUpdates request waiting for updates, if any: a new one terminates it with 409, as Telegram does. */
  let pendingPoll: { conflict: () => void } | undefined;

  const messageIdFor = (chatId: number, given?: number): number => {
    const next = given ?? nextMessageId.get(chatId) ?? 1;
    nextMessageId.set(chatId, Math.max(next + 1, nextMessageId.get(chatId) ?? 1));
    return next;
  };

  function enqueue(update: Omit<FakeUpdate, 'update_id'> & { update_id?: number }): FakeUpdate {
    const full = { ...update, update_id: update.update_id ?? nextUpdateId++ } as FakeUpdate;
    updates.push(full);
    events.emit('update');
    return full;
  }

  function baseMessage(input: BaseInput, chat: Record<string, unknown>): Record<string, unknown> {
    const from = input.from ?? { id: input.chatId, is_bot: false, first_name: `User${input.chatId}`, language_code: 'en' };
    const message: Record<string, unknown> = {
      message_id: messageIdFor(input.chatId, input.messageId),
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

  const privateChat = (input: BaseInput): Record<string, unknown> => ({ id: input.chatId, type: 'private', first_name: input.from?.first_name ?? `User${input.chatId}` });

  function addFile(bytes: Uint8Array, mimeType: string, extension: string): { file_id: string; file_unique_id: string; file_size: number } {
    const id = `file-${nextFileId++}`;
    files.set(id, { bytes, path: `voice/${id}.${extension}`, mimeType });
    return { file_id: id, file_unique_id: `u${id}`, file_size: bytes.byteLength };
  }

  const fake: FakeTelegram = {
    apiRoot: '',
    token,
    bot,
    calls,
    sent,
    updates,
    get webhook() {
      return webhook;
    },
    commands,
    sendText: (input) => enqueue({ message: { ...baseMessage(input, privateChat(input)), text: input.text, ...withEntities(commandEntities(input.text)) } }),
    sendPhoto: (input) =>
      enqueue({
        message: {
          ...baseMessage(input, privateChat(input)),
          photo: [{ file_id: 'photo-small', file_unique_id: 'ps', width: 90, height: 90 }, { file_id: 'photo-big', file_unique_id: 'pb', width: 1280, height: 1280 }],
          ...(input.caption === undefined ? {} : { caption: input.caption }),
        },
      }),
    sendSticker: (input) =>
      enqueue({ message: { ...baseMessage(input, privateChat(input)), sticker: { file_id: 'sticker', file_unique_id: 'st', type: 'regular', width: 512, height: 512, is_animated: false, is_video: false, emoji: input.emoji ?? '😀' } } }),
    sendContact: (input) => {
      const message = baseMessage(input, privateChat(input));
      const from = message['from'] as FakeUser;
      return enqueue({ message: { ...message, contact: { phone_number: input.phoneNumber, first_name: input.firstName ?? from.first_name, user_id: input.contactUserId ?? from.id } } });
    },
    sendVoice: (input) => {
      const file = addFile(input.audio, input.mimeType ?? 'audio/ogg', 'oga');
      return enqueue({ message: { ...baseMessage(input, privateChat(input)), voice: { ...file, duration: input.duration ?? 2, mime_type: input.mimeType ?? 'audio/ogg' } } });
    },
    sendGroupText: (input) => {
      const chat = { id: input.chatId, type: input.chatType ?? 'supergroup', title: `Group ${input.chatId}`, ...(input.threadId === undefined ? {} : { is_forum: true }) };
      const prefix = input.mention ? `@${bot.username} ` : '';
      const text = `${prefix}${input.text}`;
      const entities = [...(input.mention ? [{ type: 'mention', offset: 0, length: bot.username.length + 1 }] : []), ...commandEntities(text)];
      return enqueue({ message: { ...baseMessage({ ...input, from: input.from ?? { id: 5001, first_name: 'Member', language_code: 'en' } }, chat), text, ...withEntities(entities) } });
    },
    businessConnection: (input) => {
      connections.set(input.id, { enabled: input.enabled ?? true });
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
      enqueue({ business_message: { ...baseMessage(input, privateChat(input)), text: input.text, ...withEntities(commandEntities(input.text)), business_connection_id: input.connectionId } }),
    enqueue,
    failNext(method, failure) {
      const list = failures.get(method) ?? [];
      list.push('retryAfter' in failure ? { code: 429, description: `Too Many Requests: retry after ${failure.retryAfter}`, parameters: { retry_after: failure.retryAfter } } : failure);
      failures.set(method, list);
    },
    loseResponseNext(method) {
      afterEffects.set(method, [...(afterEffects.get(method) ?? []), { kind: 'lose' }]);
    },
    holdResponseNext(method) {
      let applied!: (call: FakeCall) => void;
      let release!: () => void;
      const effect: AfterEffect = {
        kind: 'hold',
        applied: new Promise<FakeCall>((resolve) => (applied = resolve)),
        released: new Promise<void>((resolve) => (release = resolve)),
        onApplied: (call) => applied(call),
        release: () => release(),
      };
      afterEffects.set(method, [...(afterEffects.get(method) ?? []), effect]);
      holds.add(effect);
      return { applied: effect.applied, release: effect.release };
    },
    setConflict(on) {
      conflict = on;
      if (on) pendingPoll?.conflict();
    },
    hang(method, on = true) {
      if (on) hanging.add(method);
      else {
        hanging.delete(method);
        events.emit('released');
      }
    },
    async deliverToWebhook(update, deliverOptions = {}) {
      if (!webhook) throw new Error('No webhook is registered (setWebhook was not called).');
      const secret = deliverOptions.secretToken === undefined ? webhook.secretToken : deliverOptions.secretToken;
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    waitForMessages(count, waitOptions = {}) {
      const pick = () => (waitOptions.chatId === undefined ? sent : sent.filter((message) => message.chatId === waitOptions.chatId));
      return waitFor(events, 'sent', () => (pick().length >= count ? pick() : undefined), waitOptions.timeoutMs ?? 10_000, () => `${count} sent message(s)${waitOptions.chatId === undefined ? '' : ` to chat ${waitOptions.chatId}`}; have ${pick().length}`);
    },
    waitForCall(method, match = () => true, waitOptions = {}) {
      return waitFor(events, 'call', () => calls.find((call) => call.method === method && match(call)), waitOptions.timeoutMs ?? 10_000, () => `a ${method} call`);
    },
    callsOf: (method) => calls.filter((call) => call.method === method),
    sentTo: (chatId) => sent.filter((message) => message.chatId === chatId),
    close: async () => {},
  };

  /** Answers one Bot API method; returns the result, or a failure. */
  async function answer(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<{ result: unknown } | Failure> {
    const queued = failures.get(method);
    const failure = queued?.shift();
    if (failure) return failure;
    switch (method) {
      case 'getMe':
        return { result: { ...bot, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } };
      case 'getUpdates':
        return getUpdates(params, signal);
      case 'deleteWebhook':
        webhook = undefined;
        if (params['drop_pending_updates']) confirmedOffset = nextUpdateId;
        return { result: true };
      case 'setWebhook':
        webhook = { url: String(params['url']), secretToken: params['secret_token'] === undefined ? undefined : String(params['secret_token']) };
        pendingPoll?.conflict();
        return { result: true };
      case 'getWebhookInfo':
        return { result: { url: webhook?.url ?? '', has_custom_certificate: false, pending_update_count: 0 } };
      case 'setMyCommands':
        commands.set(String(params['language_code'] ?? ''), (params['commands'] as { command: string; description: string }[]) ?? []);
        return { result: true };
      case 'getMyCommands':
        return { result: commands.get(String(params['language_code'] ?? '')) ?? [] };
      case 'setMyDescription':
      case 'setMyShortDescription':
      case 'sendChatAction':
      case 'setMessageReaction':
        return { result: true };
      case 'readBusinessMessage':
      case 'getBusinessConnection': {
        const id = String(params['business_connection_id']);
        const connection = connections.get(id);
        if (!connection) return { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_INVALID' };
        if (method === 'readBusinessMessage') return connection.enabled ? { result: true } : { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_NOT_ALLOWED' };
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
        return sendMessage(params);
      case 'getFile': {
        const file = files.get(String(params['file_id']));
        if (!file) return { code: 400, description: 'Bad Request: invalid file_id' };
        return { result: { file_id: params['file_id'], file_unique_id: `u${String(params['file_id'])}`, file_size: file.bytes.byteLength, file_path: file.path } };
      }
      default:
        return { code: 404, description: 'Not Found' };
    }
  }

  function sendMessage(params: Record<string, unknown>): { result: unknown } | Failure {
    const chatId = Number(params['chat_id']);
    const text = typeof params['text'] === 'string' ? params['text'] : '';
    if (!Number.isFinite(chatId)) return { code: 400, description: 'Bad Request: chat not found' };
    if (text.trim() === '') return { code: 400, description: 'Bad Request: message text is empty' };
    if (text.length > MAX_TEXT) return { code: 400, description: 'Bad Request: message is too long' };
    if (params['parse_mode'] !== undefined && params['entities'] !== undefined) return { code: 400, description: "Bad Request: can't parse entities: both parse_mode and entities given" };
    const problem = entityProblem(text, params['entities']);
    if (problem) return { code: 400, description: `Bad Request: can't parse entities: ${problem}` };
    const connectionId = params['business_connection_id'] === undefined ? undefined : String(params['business_connection_id']);
    if (connectionId !== undefined && !connections.get(connectionId)?.enabled) return { code: 400, description: 'Bad Request: BUSINESS_CONNECTION_INVALID' };
    const reply = params['reply_parameters'] as { message_id?: number } | undefined;
    const message: FakeSentMessage = {
      messageId: messageIdFor(chatId, Math.max(100_000, nextMessageId.get(chatId) ?? 0)),
      chatId,
      text,
      entities: params['entities'] as FakeSentMessage['entities'],
      parseMode: params['parse_mode'] === undefined ? undefined : String(params['parse_mode']),
      businessConnectionId: connectionId,
      threadId: params['message_thread_id'] === undefined ? undefined : Number(params['message_thread_id']),
      replyToMessageId: reply?.message_id,
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

  async function getUpdates(params: Record<string, unknown>, signal: AbortSignal): Promise<{ result: unknown } | Failure> {
    const conflictAnswer: Failure = { code: 409, description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running' };
    if (conflict) return conflictAnswer;
    if (webhook) return { code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" };
    // A newer poll terminates the one still waiting, as Telegram does.
    pendingPoll?.conflict();
    const offset = Number(params['offset'] ?? 0);
    if (offset > 0) confirmedOffset = Math.max(confirmedOffset, offset);
    const limit = Math.min(100, Math.max(1, Number(params['limit'] ?? 100)));
    const timeoutMs = Math.max(0, Number(params['timeout'] ?? 0)) * 1000;
    const available = () => updates.filter((update) => update.update_id >= confirmedOffset).slice(0, limit);
    if (available().length > 0 || timeoutMs === 0) return { result: available() };
    return new Promise((resolve) => {
      let done = false;
      const finish = (value: { result: unknown } | Failure) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        events.off('update', onUpdate);
        signal.removeEventListener('abort', onAbort);
        if (pendingPoll === poll) pendingPoll = undefined;
        resolve(value);
      };
      const onUpdate = () => {
        if (available().length > 0) finish({ result: available() });
      };
      const onAbort = () => finish({ result: [] });
      const poll = { conflict: () => finish(conflictAnswer) };
      pendingPoll = poll;
      const timer = setTimeout(() => finish({ result: [] }), timeoutMs);
      events.on('update', onUpdate);
      signal.addEventListener('abort', onAbort);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && fileMatch) {
      const file = fileMatch[1] === token ? [...files.values()].find((f) => f.path === fileMatch[2]) : undefined;
      if (!file) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      res.writeHead(200, { 'content-type': file.mimeType, 'content-length': file.bytes.byteLength });
      res.end(Buffer.from(file.bytes));
      return;
    }
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    if (match[1] !== token) return sendJson(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const method = match[2]!;
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const body = await readBody(req);
    if (body.length > 0) {
      const type = req.headers['content-type'] ?? '';
      if (type.includes('application/json')) Object.assign(params, JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      else if (type.includes('multipart/form-data')) {
        const form = await new Response(body, { headers: { 'content-type': type } }).formData();
        for (const [key, value] of form) if (typeof value === 'string') params[key] = parseField(value);
      }
    }
    const call: FakeCall = { method, params, at: Date.now() };
    calls.push(call);
    events.emit('call');
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    if (hanging.has(method) && !(await released(method, aborted.signal))) return;
    const outcome = await answer(method, params, aborted.signal);
    const effect = 'result' in outcome ? afterEffects.get(method)?.shift() : undefined;
    if (effect?.kind === 'lose') {
      // Committed, and the answer never leaves: the client sees the connection close (a network error).
      req.socket.destroy();
      return;
    }
    if (effect?.kind === 'hold') {
      effect.onApplied(call);
      await effect.released;
      holds.delete(effect);
    }
    if ('result' in outcome) return sendJson(res, 200, { ok: true, result: outcome.result });
    return sendJson(res, outcome.code, { ok: false, error_code: outcome.code, description: outcome.description, ...(outcome.parameters ? { parameters: outcome.parameters } : {}) });
  }

  /** Resolves true once `method` no longer hangs, false when the caller gave up first. */
  function released(method: string, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const finish = (value: boolean) => {
        events.off('released', onRelease);
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const onRelease = () => {
        if (!hanging.has(method)) finish(true);
      };
      const onAbort = () => finish(false);
      if (signal.aborted) return resolve(false);
      events.on('released', onRelease);
      signal.addEventListener('abort', onAbort);
    });
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});
    handle(req, res).catch((error: unknown) => sendJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: ${String(error)}` }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  Object.assign(fake, {
    apiRoot: `http://127.0.0.1:${port}`,
    close: () => {
      for (const hold of holds) hold.release();
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  });
  return fake;
}

/** The `bot_command` entity Telegram adds to a text that starts with `/command` (or `/command@bot`). */
function commandEntities(text: string): { type: string; offset: number; length: number }[] {
  const match = /^\/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,})?/.exec(text);
  return match ? [{ type: 'bot_command', offset: 0, length: match[0].length }] : [];
}

function withEntities(entities: readonly { type: string; offset: number; length: number }[]): { entities?: readonly { type: string; offset: number; length: number }[] } {
  return entities.length > 0 ? { entities } : {};
}

/** What Telegram checks of `entities`: each inside the text (UTF-16 offsets), non-empty, of a known type. */
function entityProblem(text: string, raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw)) return 'entities must be an array';
  for (const [index, entity] of raw.entries()) {
    const { type, offset, length } = (entity ?? {}) as { type?: unknown; offset?: unknown; length?: unknown };
    if (typeof type !== 'string' || !ENTITY_TYPES.has(type)) return `entity ${index} has an unknown type ${String(type)}`;
    if (!Number.isInteger(offset) || !Number.isInteger(length) || (offset as number) < 0 || (length as number) <= 0) return `entity ${index} has a bad offset or length`;
    if ((offset as number) + (length as number) > text.length) return `entity ${index} ends at ${(offset as number) + (length as number)}, past the text's ${text.length} UTF-16 units`;
    if (type === 'text_link' && typeof (entity as { url?: unknown }).url !== 'string') return `text_link entity ${index} has no url`;
  }
  return undefined;
}

/** grammY sends multipart fields as JSON-encoded strings for objects and numbers. */
function parseField(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function waitFor<T>(events: EventEmitter, event: string, check: () => T | undefined, timeoutMs: number, describe: () => string): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<T>((resolve, reject) => {
    const onEvent = () => {
      const value = check();
      if (value === undefined) return;
      clearTimeout(timer);
      events.off(event, onEvent);
      resolve(value);
    };
    const timer = setTimeout(() => {
      events.off(event, onEvent);
      reject(new Error(`Fake Telegram: timed out after ${timeoutMs} ms waiting for ${describe()}`));
    }, timeoutMs);
    events.on(event, onEvent);
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}
