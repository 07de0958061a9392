import { EventEmitter } from 'node:events';
import { Long, type tl } from '@mtcute/node';
import { TELEGRAM_REACTION_EMOJI } from '../../channels/telegram/reactions.js';

/**
 * A fake Telegram at the MTProto method level, for tests of the user-account channel. It is not a network server:
 * the real `TelegramClient` of `@mtcute/node` reaches it through a link (`fakeMtprotoLink`, in-process; or
 * `serveFakeMtproto` + `remoteFakeMtprotoLink` for a spawned process), whose network middleware hands every RPC to
 * `handle()` here and never goes to the wire. The state is what one signed-in account sees: users (people, bots,
 * Telegram's service account 777000), private chats with their messages, the update sequence (pts) that catch-up
 * (`updates.getDifference`) replays, `random_id` dedupe as Telegram does it, the login flow, scripted failures and
 * connection drops.
 *
 * @example
 * const telegram = new FakeMtproto();
 * const client = createFakeClient(fakeMtprotoLink(telegram));
 * telegram.incoming(telegram.addUser({ firstName: 'Ann' }).id, 'hello');
 * const [reply] = await telegram.waitForSent(1, { chatId: ann.id });
 */
export class FakeMtproto {
  /** The signed-in account (`users.getUsers` of inputUserSelf). */
  readonly self: FakeMtprotoUser;
  /** Every RPC the clients made, oldest first (failed ones included). */
  readonly calls: FakeMtprotoCall[] = [];
  /** Reactions the account set (accepted ones: a message of the chat, an emoji of Telegram's standard list), in order. */
  readonly reactions: FakeReaction[] = [];
  /** `messages.readHistory` calls, in order. */
  readonly reads: FakeRead[] = [];
  /** `messages.setTyping` calls, in order. */
  readonly typing: FakeTyping[] = [];
  /** Login: the code `auth.signIn` accepts. */
  phoneCode = '12345';
  /** Login: the 2FA password; when set, `auth.signIn` answers SESSION_PASSWORD_NEEDED. See `checkPassword`. */
  password: string | undefined;

  private readonly users = new Map<number, FakeMtprotoUser>();
  private readonly messages = new Map<number, FakeMtprotoMessage[]>();
  private readonly byRandomId = new Map<string, FakeMtprotoMessage>();
  private readonly log: { pts: number; update: tl.TypeUpdate }[] = [];
  private readonly failures = new Map<string, ScriptedFailure[]>();
  private readonly handlers = new Map<string, FakeMethodHandler>();
  /** Calls held after they took effect ({@link holdNext}) and before ({@link delayNext}), by method. */
  private readonly holds = new Map<string, Gate[]>();
  private readonly delays = new Map<string, Gate[]>();
  private readonly events = new EventEmitter();
  private nextMessageId = 1;
  private nextUserId = 1000;
  private pts = 1;
  private online = true;
  private onlineWaiters: (() => void)[] = [];
  private signedIn: boolean;
  private revokedWith: string | undefined;
  private qrScanned = false;

  constructor(options: FakeMtprotoOptions = {}) {
    this.self = { id: 100, firstName: 'Owner', phone: '15550100', ...options.self, self: true };
    this.users.set(this.self.id, this.self);
    this.users.set(SERVICE_USER_ID, { id: SERVICE_USER_ID, firstName: 'Telegram', phone: '42777', verified: true });
    this.signedIn = options.signedIn ?? true;
    this.events.setMaxListeners(0);
  }

  // ---- people and chats ------------------------------------------------------------------------------------------

  /** Adds a user (a person unless `bot: true`); `id` defaults to the next free one. */
  addUser(user: Partial<FakeMtprotoUser> & { firstName?: string } = {}): FakeMtprotoUser {
    const id = user.id ?? this.nextUserId++;
    const added: FakeMtprotoUser = { id, firstName: user.firstName ?? `User${id}`, ...user, self: false };
    this.users.set(id, added);
    return added;
  }

  user(id: number): FakeMtprotoUser | undefined {
    return this.users.get(id);
  }

  /** A private message from `fromUserId` (added as a user if unknown), delivered to online clients at once. */
  incoming(fromUserId: number, content: string | FakeIncomingContent): FakeMtprotoMessage {
    if (!this.users.has(fromUserId)) this.addUser({ id: fromUserId });
    const input = typeof content === 'string' ? { text: content } : content;
    return this.store({
      chatId: fromUserId,
      out: false,
      text: input.text ?? '',
      media: input.media,
      entities: input.entities,
      replyToId: input.replyToId,
      fromUserId,
    });
  }

  /** The account's owner writes in the chat with `chatId` from another device: an outgoing message clients receive. */
  ownerWrites(chatId: number, text: string): FakeMtprotoMessage {
    return this.store({ chatId, out: true, text, fromUserId: this.self.id });
  }

  /** A service message (e.g. "joined Telegram") in a private chat. */
  serviceMessage(chatId: number, action: tl.TypeMessageAction = { _: 'messageActionContactSignUp' }): FakeMtprotoMessage {
    return this.store({ chatId, out: false, text: '', fromUserId: chatId, action });
  }

  /** All messages of the private chat with `chatId`, oldest first (both sides). */
  history(chatId: number): readonly FakeMtprotoMessage[] {
    return this.messages.get(chatId) ?? [];
  }

  /** What the account sent through the API (not `ownerWrites`), oldest first; to `chatId` if given. */
  sent(chatId?: number): FakeMtprotoMessage[] {
    const all = [...this.messages.values()].flat().filter((m) => m.out && m.randomId !== undefined);
    return all.filter((m) => chatId === undefined || m.chatId === chatId).sort((a, b) => a.id - b.id);
  }

  /** Resolves once at least `count` messages were sent (to `chatId` if given). */
  waitForSent(count: number, options: { chatId?: number; timeoutMs?: number } = {}): Promise<FakeMtprotoMessage[]> {
    return this.waitFor(
      () => {
        const sent = this.sent(options.chatId);
        return sent.length >= count ? sent : undefined;
      },
      options.timeoutMs,
      `${count} sent message(s)`,
    );
  }

  /** Resolves with the first call (made or coming) of `method` that `match` accepts. */
  waitForCall(method: string, match: (call: FakeMtprotoCall) => boolean = () => true, timeoutMs?: number): Promise<FakeMtprotoCall> {
    return this.waitFor(() => this.calls.find((c) => c.method === method && match(c)), timeoutMs, `a call of ${method}`);
  }

  callsOf(method: string): FakeMtprotoCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  // ---- scripted trouble -------------------------------------------------------------------------------------------

  /**
   * The next `times` calls (default 1; `Infinity` for always, until `clearFailures`) of `method` fail with `error`,
   * e.g. `{ code: 420, message: 'FLOOD_WAIT_3' }` or `{ code: 401, message: 'AUTH_KEY_UNREGISTERED' }`.
   */
  failNext(method: string, error: FakeRpcError, times = 1): void {
    const list = this.failures.get(method) ?? [];
    list.push({ error, remaining: times });
    this.failures.set(method, list);
  }

  clearFailures(method?: string): void {
    if (method === undefined) this.failures.clear();
    else this.failures.delete(method);
  }

  /** From now on every call fails with 401 `reason` (the session was ended from another device, or the account). */
  revokeSession(reason: 'AUTH_KEY_UNREGISTERED' | 'SESSION_REVOKED' | 'USER_DEACTIVATED' | 'USER_DEACTIVATED_BAN' = 'SESSION_REVOKED'): void {
    this.revokedWith = reason;
  }

  /**
   * The network goes away: open connections close, new ones are refused and calls wait until `restoreConnection()`.
   * Messages that arrive meanwhile are not pushed; clients get them by catch-up.
   */
  dropConnection(): void {
    this.online = false;
    this.events.emit('drop');
  }

  restoreConnection(): void {
    this.online = true;
    for (const wake of this.onlineWaiters.splice(0)) wake();
  }

  get isOnline(): boolean {
    return this.online;
  }

  /** Resolves when the network is up (at once if it is). */
  whenOnline(): Promise<void> {
    return this.online ? Promise.resolve() : new Promise((resolve) => this.onlineWaiters.push(resolve));
  }

  /**
   * The next call of `method` is carried out (a send reaches the chat), and its answer is held back until `release()`:
   * `applied` resolves once it took effect, so a test can kill the caller's process between the two.
   */
  holdNext(method: string): { readonly applied: Promise<FakeMtprotoCall>; release(): void } {
    const { arrived, release } = gateNext(this.holds, method);
    return { applied: arrived, release };
  }

  /**
   * The next call of `method` waits, before it is carried out, until `release()`: Telegram being slow to look.
   * `reached` resolves once the call arrived. (Unlike {@link holdNext}, the answer reflects the moment of release.)
   */
  delayNext(method: string): { readonly reached: Promise<FakeMtprotoCall>; release(): void } {
    const { arrived, release } = gateNext(this.delays, method);
    return { reached: arrived, release };
  }

  /** Answers `method` with `handler` instead of the built-in behaviour (or adds a method the fake does not know). */
  on(method: string, handler: FakeMethodHandler): void {
    this.handlers.set(method, handler);
  }

  /**
   * Telegram tells online clients to catch up (`updatesTooLong`), as it does after a burst or a reconnect: each
   * calls `updates.getDifference` at once, without waiting out a gap.
   */
  tellClientsToCatchUp(): void {
    this.push({ _: 'updatesTooLong' });
  }

  /** Login by QR: the next `auth.exportLoginToken` succeeds as if the owner scanned the code on a phone. */
  scanQr(): void {
    this.qrScanned = true;
    this.push({ _: 'updateShort', update: { _: 'updateLoginToken' }, date: now() });
  }

  get isSignedIn(): boolean {
    return this.signedIn && this.revokedWith === undefined;
  }

  // ---- pushes to clients --------------------------------------------------------------------------------------------

  /** Registers a receiver of server-pushed updates (a link does this per client); returns its removal. */
  subscribe(receiver: FakeMtprotoReceiver): () => void {
    const onUpdates = (updates: tl.TypeUpdates) => receiver.updates(updates);
    const onDrop = () => receiver.drop();
    this.events.on('updates', onUpdates);
    this.events.on('drop', onDrop);
    return () => {
      this.events.off('updates', onUpdates);
      this.events.off('drop', onDrop);
    };
  }

  // ---- RPC ----------------------------------------------------------------------------------------------------------

  /** Answers one RPC as Telegram would: a TL result, or `{ _: 'mt_rpc_error', errorCode, errorMessage }`. */
  async handle(request: tl.RpcMethod): Promise<unknown> {
    await this.whenOnline();
    const method = request._;
    const call: FakeMtprotoCall = { method, request, at: Date.now() };
    this.calls.push(call);
    this.events.emit('change');
    await this.delays.get(method)?.shift()?.pass(call);
    const failure = this.takeFailure(method);
    const error = failure ?? this.authError(method);
    if (error !== undefined) {
      call.error = error.message;
      return { _: 'mt_rpc_error', errorCode: error.code, errorMessage: error.message };
    }
    const custom = this.handlers.get(method);
    const result = custom ? await custom(request, this) : this.answer(request);
    this.events.emit('change');
    await this.holds.get(method)?.shift()?.pass(call);
    return result;
  }

  private authError(method: string): FakeRpcError | undefined {
    if (this.revokedWith !== undefined) return { code: 401, message: this.revokedWith };
    if (this.signedIn || LOGIN_METHODS.has(method)) return undefined;
    return { code: 401, message: 'AUTH_KEY_UNREGISTERED' };
  }

  private takeFailure(method: string): FakeRpcError | undefined {
    const list = this.failures.get(method);
    const first = list?.[0];
    if (!list || !first) return undefined;
    first.remaining -= 1;
    if (first.remaining <= 0) list.shift();
    return first.error;
  }

  private answer(request: tl.RpcMethod): unknown {
    switch (request._) {
      case 'users.getUsers':
        return request.id
          .map((input) => this.resolveInputUser(input))
          .filter((u) => u !== undefined)
          .map((u) => this.userTl(u));
      case 'users.getFullUser': {
        const user = this.resolveInputUser(request.id);
        if (!user) return rpcError(400, 'USER_ID_INVALID');
        return {
          _: 'users.userFull',
          fullUser: { _: 'userFull', id: user.id, settings: { _: 'peerSettings' }, notifySettings: { _: 'peerNotifySettings' }, commonChatsCount: 0 },
          chats: [],
          users: [this.userTl(user)],
        };
      }
      case 'contacts.resolveUsername': {
        const user = [...this.users.values()].find((u) => u.username?.toLowerCase() === request.username.toLowerCase());
        if (!user) return rpcError(400, 'USERNAME_NOT_OCCUPIED');
        return { _: 'contacts.resolvedPeer', peer: { _: 'peerUser', userId: user.id }, chats: [], users: [this.userTl(user)] };
      }
      case 'updates.getState':
        return this.stateTl();
      case 'updates.getDifference':
        return this.difference(request.pts);
      case 'messages.sendMessage':
        return this.sendMessage(request);
      case 'messages.setTyping': {
        const chatId = peerUserId(request.peer);
        if (chatId !== undefined) this.typing.push({ chatId, action: request.action._, at: Date.now() });
        return true;
      }
      case 'messages.sendReaction':
        return this.sendReaction(request);
      case 'messages.readHistory': {
        const chatId = peerUserId(request.peer);
        if (chatId !== undefined) this.reads.push({ chatId, maxId: request.maxId, at: Date.now() });
        return { _: 'messages.affectedMessages', pts: this.pts, ptsCount: 0 };
      }
      case 'messages.getHistory':
        return this.getHistory(request);
      case 'account.updateStatus':
        return true;
      case 'auth.sendCode':
        return { _: 'auth.sentCode', type: { _: 'auth.sentCodeTypeApp', length: this.phoneCode.length }, phoneCodeHash: 'fake-phone-code-hash' };
      case 'auth.signIn': {
        if (request.phoneCode !== this.phoneCode) return rpcError(400, 'PHONE_CODE_INVALID');
        if (this.password !== undefined) return rpcError(401, 'SESSION_PASSWORD_NEEDED');
        return this.authorize();
      }
      case 'account.getPassword':
        return this.passwordTl();
      case 'auth.checkPassword':
        // The SRP proof is not verified: the fake accepts any answer while a password is set (see `failNext` for a
        // wrong one: `failNext('auth.checkPassword', { code: 400, message: 'PASSWORD_HASH_INVALID' })`).
        return this.password === undefined ? rpcError(400, 'PASSWORD_HASH_INVALID') : this.authorize();
      case 'auth.exportLoginToken':
        if (this.qrScanned) return { _: 'auth.loginTokenSuccess', authorization: this.authorize() };
        return { _: 'auth.loginToken', expires: now() + 30, token: new TextEncoder().encode('fake-qr-token') };
      case 'auth.logOut':
        this.signedIn = false;
        return { _: 'auth.loggedOut' };
      case 'help.getConfig':
        return rpcError(400, 'FAKE_NO_CONFIG');
      default:
        return rpcError(400, `FAKE_METHOD_NOT_IMPLEMENTED_${request._.replace(/\W/g, '_').toUpperCase()}`);
    }
  }

  private authorize(): tl.auth.RawAuthorization {
    this.signedIn = true;
    this.revokedWith = undefined;
    this.qrScanned = false;
    return { _: 'auth.authorization', user: this.userTl(this.self) };
  }

  private passwordTl(): unknown {
    if (this.password === undefined) {
      return {
        _: 'account.password',
        hasPassword: false,
        newAlgo: { _: 'passwordKdfAlgoUnknown' },
        newSecureAlgo: { _: 'securePasswordKdfAlgoUnknown' },
        secureRandom: new Uint8Array(32),
      };
    }
    return {
      _: 'account.password',
      hasPassword: true,
      hint: 'fake hint',
      currentAlgo: {
        _: 'passwordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow',
        salt1: new Uint8Array(8).fill(1),
        salt2: new Uint8Array(16).fill(2),
        g: 3,
        p: SRP_PRIME,
      },
      srpB: SRP_PRIME.slice().fill(7, 0, 255),
      srpId: Long.fromNumber(1),
      newAlgo: { _: 'passwordKdfAlgoUnknown' },
      newSecureAlgo: { _: 'securePasswordKdfAlgoUnknown' },
      secureRandom: new Uint8Array(32),
    };
  }

  private sendMessage(request: tl.messages.RawSendMessageRequest): unknown {
    const chatId = peerUserId(request.peer);
    if (chatId === undefined || !this.users.has(chatId)) return rpcError(400, 'PEER_ID_INVALID');
    const key = request.randomId.toString();
    const earlier = this.byRandomId.get(key);
    // Telegram keeps random_id per account: a retried send gives back the message it already made, not a new one.
    if (earlier) return { _: 'updateShortSentMessage', out: true, id: earlier.id, pts: this.pts, ptsCount: 0, date: earlier.date };
    if (request.message.length > 4096) return rpcError(400, 'MESSAGE_TOO_LONG');
    if (request.message.trim() === '') return rpcError(400, 'MESSAGE_EMPTY');
    const asked = request.replyTo?._ === 'inputReplyToMessage' ? request.replyTo.replyToMsgId : undefined;
    // A quote of a message that is not in the chat (deleted, never there) is dropped: the message goes out unquoted.
    const replyToId = asked !== undefined && this.history(chatId).some((m) => m.id === asked) ? asked : undefined;
    const message = this.store(
      { chatId, out: true, text: request.message, entities: request.entities, replyToId, fromUserId: this.self.id, randomId: key },
      false,
    );
    return { _: 'updateShortSentMessage', out: true, id: message.id, pts: this.pts, ptsCount: 1, date: message.date, entities: request.entities };
  }

  /** One emoji of Telegram's standard list on a message of the chat, as Telegram checks it (no Premium here). */
  private sendReaction(request: tl.messages.RawSendReactionRequest): unknown {
    const chatId = peerUserId(request.peer);
    if (chatId === undefined || !this.users.has(chatId)) return rpcError(400, 'PEER_ID_INVALID');
    if (!this.history(chatId).some((m) => m.id === request.msgId && m.action === undefined)) return rpcError(400, 'MESSAGE_ID_INVALID');
    const reactions = request.reaction ?? [];
    if (reactions.length > 1) return rpcError(400, 'REACTIONS_TOO_MANY');
    const [first] = reactions;
    if (first !== undefined && (first._ !== 'reactionEmoji' || !TELEGRAM_REACTION_EMOJI.includes(first.emoticon))) return rpcError(400, 'REACTION_INVALID');
    this.reactions.push({ chatId, messageId: request.msgId, emoji: first?._ === 'reactionEmoji' ? first.emoticon : '', at: Date.now() });
    return { _: 'updates', updates: [], users: [], chats: [], date: now(), seq: 0 };
  }

  private getHistory(request: tl.messages.RawGetHistoryRequest): unknown {
    const chatId = peerUserId(request.peer);
    if (chatId === undefined) return rpcError(400, 'PEER_ID_INVALID');
    // Newest first, as Telegram answers; offsetId excludes itself, addOffset shifts the window (negative: newer).
    let list = [...this.history(chatId)].reverse();
    if (request.offsetId > 0) list = list.filter((m) => m.id < request.offsetId || (request.addOffset < 0 && m.id >= request.offsetId));
    if (request.minId > 0) list = list.filter((m) => m.id > request.minId);
    if (request.maxId > 0) list = list.filter((m) => m.id < request.maxId);
    const start = Math.max(0, request.addOffset < 0 ? 0 : request.addOffset);
    const page = list.slice(start, start + (request.limit > 0 ? request.limit : 100));
    return { _: 'messages.messages', messages: page.map((m) => this.messageTl(m)), chats: [], users: this.usersOf(page) };
  }

  private difference(fromPts: number): unknown {
    const entries = this.log.filter((e) => e.pts > fromPts);
    if (entries.length === 0) return { _: 'updates.differenceEmpty', date: now(), seq: 0 };
    const newMessages: tl.TypeMessage[] = [];
    const otherUpdates: tl.TypeUpdate[] = [];
    for (const { update } of entries) {
      if (update._ === 'updateNewMessage') newMessages.push(update.message);
      else otherUpdates.push(update);
    }
    const userIds = new Set<number>([this.self.id]);
    for (const m of newMessages) if (m._ !== 'messageEmpty' && m.peerId._ === 'peerUser') userIds.add(m.peerId.userId);
    const users = [...userIds]
      .map((id) => this.users.get(id))
      .filter((u) => u !== undefined)
      .map((u) => this.userTl(u));
    return { _: 'updates.difference', newMessages, newEncryptedMessages: [], otherUpdates, chats: [], users, state: this.stateTl() };
  }

  private stateTl(): tl.updates.RawState {
    return { _: 'updates.state', pts: this.pts, qts: 0, date: now(), seq: 0, unreadCount: 0 };
  }

  // ---- storage of messages and updates ------------------------------------------------------------------------------

  private store(input: StoredInput, pushToClients = true): FakeMtprotoMessage {
    const message: FakeMtprotoMessage = {
      id: this.nextMessageId++,
      chatId: input.chatId,
      fromUserId: input.fromUserId,
      out: input.out,
      text: input.text,
      entities: input.entities,
      media: input.media,
      action: input.action,
      replyToId: input.replyToId,
      randomId: input.randomId,
      date: now(),
    };
    const list = this.messages.get(input.chatId) ?? [];
    list.push(message);
    this.messages.set(input.chatId, list);
    if (input.randomId !== undefined) this.byRandomId.set(input.randomId, message);
    this.pts += 1;
    const update: tl.RawUpdateNewMessage = { _: 'updateNewMessage', message: this.messageTl(message), pts: this.pts, ptsCount: 1 };
    this.log.push({ pts: this.pts, update });
    if (pushToClients) this.push({ _: 'updates', updates: [update], users: this.usersOf([message]), chats: [], date: message.date, seq: 0 });
    this.events.emit('change');
    return message;
  }

  private push(updates: tl.TypeUpdates): void {
    if (this.online) this.events.emit('updates', updates);
  }

  /** The TL form of a stored message, as the clients receive it. */
  messageTl(message: FakeMtprotoMessage): tl.TypeMessage {
    const peerId: tl.RawPeerUser = { _: 'peerUser', userId: message.chatId };
    const fromId: tl.RawPeerUser | undefined = message.out ? { _: 'peerUser', userId: this.self.id } : undefined;
    if (message.action) return { _: 'messageService', id: message.id, peerId, fromId, out: message.out, date: message.date, action: message.action };
    return {
      _: 'message',
      id: message.id,
      peerId,
      fromId,
      out: message.out,
      date: message.date,
      message: message.text,
      entities: message.entities ? [...message.entities] : undefined,
      media: message.media,
      replyTo: message.replyToId !== undefined ? { _: 'messageReplyHeader', replyToMsgId: message.replyToId } : undefined,
    };
  }

  userTl(user: FakeMtprotoUser): tl.RawUser {
    return {
      _: 'user',
      id: user.id,
      self: user.self || undefined,
      bot: user.bot,
      contact: user.contact,
      mutualContact: user.contact,
      verified: user.verified,
      accessHash: accessHashOf(user.id),
      firstName: user.firstName,
      lastName: user.lastName,
      username: user.username,
      phone: user.phone,
      botInfoVersion: user.bot ? 1 : undefined,
    };
  }

  private usersOf(messages: readonly FakeMtprotoMessage[]): tl.RawUser[] {
    const ids = new Set<number>([this.self.id, ...messages.map((m) => m.chatId)]);
    return [...ids]
      .map((id) => this.users.get(id))
      .filter((u) => u !== undefined)
      .map((u) => this.userTl(u));
  }

  private resolveInputUser(input: tl.TypeInputUser): FakeMtprotoUser | undefined {
    if (input._ === 'inputUserSelf') return this.self;
    if (input._ === 'inputUser') return this.users.get(input.userId);
    return undefined;
  }

  private waitFor<T>(check: () => T | undefined, timeoutMs = 15_000, what = 'a condition'): Promise<T> {
    return new Promise((resolve, reject) => {
      const done = check();
      if (done !== undefined) return resolve(done);
      const onChange = () => {
        const value = check();
        if (value === undefined) return;
        cleanup();
        resolve(value);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`FakeMtproto: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.events.off('change', onChange);
      };
      this.events.on('change', onChange);
    });
  }
}

/** Telegram's service account (login codes, notices): never answered. */
export const SERVICE_USER_ID = 777000;

/** The access hash the fake gives a user: any client that saw the user can address it. */
export function accessHashOf(userId: number): Long {
  return Long.fromNumber(userId).multiply(7919).add(13);
}

export interface FakeMtprotoOptions {
  /** The signed-in account; default `{ id: 100, firstName: 'Owner', phone: '15550100' }`. */
  readonly self?: Partial<Omit<FakeMtprotoUser, 'self'>>;
  /** Whether the account starts signed in (default true); false: only the login methods work until signed in. */
  readonly signedIn?: boolean;
}

export interface FakeMtprotoUser {
  readonly id: number;
  readonly firstName: string;
  readonly lastName?: string;
  readonly username?: string;
  readonly phone?: string;
  readonly bot?: boolean;
  /** In the account's contacts. */
  readonly contact?: boolean;
  readonly verified?: boolean;
  readonly self?: boolean;
}

export interface FakeIncomingContent {
  readonly text?: string;
  readonly entities?: readonly tl.TypeMessageEntity[];
  /** Raw TL media (photo, document, contact…), passed through as given. */
  readonly media?: tl.TypeMessageMedia;
  readonly replyToId?: number;
}

export interface FakeMtprotoMessage {
  readonly id: number;
  /** The other person of the private chat. */
  readonly chatId: number;
  readonly fromUserId: number;
  /** Written by the account (through the API, or by its owner on another device). */
  readonly out: boolean;
  readonly text: string;
  readonly entities: readonly tl.TypeMessageEntity[] | undefined;
  readonly media: tl.TypeMessageMedia | undefined;
  readonly action: tl.TypeMessageAction | undefined;
  readonly replyToId: number | undefined;
  /** The `random_id` of an API send, as a decimal string (signed 64-bit). */
  readonly randomId: string | undefined;
  readonly date: number;
}

export interface FakeMtprotoCall {
  readonly method: string;
  readonly request: tl.RpcMethod;
  readonly at: number;
  /** The error message the fake answered with, if it failed the call. */
  error?: string;
}

export interface FakeReaction {
  readonly chatId: number;
  readonly messageId: number;
  readonly emoji: string;
  readonly at: number;
}

export interface FakeRead {
  readonly chatId: number;
  readonly maxId: number;
  readonly at: number;
}

export interface FakeTyping {
  readonly chatId: number;
  /** The TL action, e.g. `sendMessageTypingAction`, `sendMessageCancelAction`. */
  readonly action: string;
  readonly at: number;
}

export interface FakeRpcError {
  readonly code: number;
  readonly message: string;
}

/** One held call: `pass` tells the test it arrived and waits for its release. */
interface Gate {
  pass(call: FakeMtprotoCall): Promise<void>;
}

/** Queues a gate for the next call of `method`: `arrived` resolves with that call, `release` lets it go on. */
function gateNext(gates: Map<string, Gate[]>, method: string): { readonly arrived: Promise<FakeMtprotoCall>; release(): void } {
  let arrive!: (call: FakeMtprotoCall) => void;
  let release!: () => void;
  const arrived = new Promise<FakeMtprotoCall>((resolve) => (arrive = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const list = gates.get(method) ?? [];
  list.push({
    pass(call) {
      arrive(call);
      return released;
    },
  });
  gates.set(method, list);
  return { arrived, release };
}

export type FakeMethodHandler = (request: tl.RpcMethod, fake: FakeMtproto) => unknown;

/** Where a link delivers what the fake pushes. */
export interface FakeMtprotoReceiver {
  updates(updates: tl.TypeUpdates): void;
  /** The network dropped: close open connections. */
  drop(): void;
}

interface ScriptedFailure {
  readonly error: FakeRpcError;
  remaining: number;
}

interface StoredInput {
  readonly chatId: number;
  readonly fromUserId: number;
  readonly out: boolean;
  readonly text: string;
  readonly entities?: readonly tl.TypeMessageEntity[] | undefined;
  readonly media?: tl.TypeMessageMedia | undefined;
  readonly action?: tl.TypeMessageAction | undefined;
  readonly replyToId?: number | undefined;
  readonly randomId?: string | undefined;
}

const LOGIN_METHODS = new Set([
  'auth.sendCode',
  'auth.signIn',
  'auth.checkPassword',
  'account.getPassword',
  'auth.exportLoginToken',
  'auth.importLoginToken',
  'updates.getState',
  'help.getConfig',
]);

// The 2048-bit safe prime Telegram uses for SRP (mtcute checks g and p before computing the proof).
const SRP_PRIME = Uint8Array.from(
  Buffer.from(
    'c71caeb9c6b1c9048e6c522f70f13f73980d40238e3e21c14934d037563d930f48198a0aa7c14058229493d22530f4dbfa336f6e0ac925139543aed44cce7c3720fd51f69458705ac68cd4fe6b6b13abdc9746512969328454f18faf8c595f642477fe96bb2a941d5bcd1d4ac8cc49880708fa9b378e3c4f3a9060bee67cf9a4a4a695811051907e162753b56b0f6b410dba74d8a84b2a14b3144e0ef1284754fd17ed950d5965b4b9dd46582db1178d169c6bc465b0d6ff9ca3928fef5b9ae4e418fc15e83ebea0f87fa9ff5eed70050ded2849f47bf959d956850ce929851f0d8115f635b105ee2e4e15d04b2454bf6f4fadf034b10403119cd8e3b92fcc5b',
    'hex',
  ),
);

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function rpcError(code: number, message: string): { _: 'mt_rpc_error'; errorCode: number; errorMessage: string } {
  return { _: 'mt_rpc_error', errorCode: code, errorMessage: message };
}

function peerUserId(peer: tl.TypeInputPeer): number | undefined {
  if (peer._ === 'inputPeerUser') return peer.userId;
  if (peer._ === 'inputPeerUserFromMessage') return peer.userId;
  return undefined;
}
