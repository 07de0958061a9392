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
  /** Reactions the bot set (setMessageReaction that Telegram accepted), in order. */
  readonly reactions: FakeReaction[];
  /** Edits of the bot's messages (editMessageText, editMessageReplyMarkup) that Telegram accepted, in order. */
  readonly edits: FakeEdit[];
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
  /**
   * `from` presses an inline button of a message the bot sent (a `callback_query` with `data`, default the first
   * button's); in a business chat the pressed message carries its connection, as Telegram sends it.
   */
  pressButton(input: { message: FakeSentMessage; from?: FakeUser; data?: string }): FakeUpdate;
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
  /**
   * Calls of `method` waiting on a hang right now. A caller whose connection closed (a killed process) no longer
   * counts: wait for 0 before `hang(method, false)` so its call is not carried out after all.
   */
  hanging(method: string): number;
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
  /** The caller's label when it used `apiRoot + '/via/<label>'` as its API root (which process made the call). */
  readonly via?: string;
  /** When the answer left (or the caller went away); unset while the call is under way. */
  answeredAt?: number;
}

/**
 * A reaction the bot set. Telegram accepts it only on a message of that chat and with an emoji of its standard list
 * (written as Telegram writes it, e.g. `❤` without U+FE0F); otherwise it answers 400.
 */
export interface FakeReaction {
  readonly chatId: number;
  readonly messageId: number;
  /** The emoji set; an empty list of reactions (the bot's reaction removed) is recorded as ''. */
  readonly emoji: string;
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
  /** The message it quotes (reply_parameters); undefined also when the quoted message did not exist and Telegram was allowed to send without it. */
  readonly replyToMessageId: number | undefined;
  /** The inline keyboard sent with it (reply_markup), if any. */
  readonly replyMarkup: FakeInlineKeyboard | undefined;
  readonly at: number;
}

export interface FakeInlineKeyboard {
  readonly inline_keyboard: readonly (readonly { readonly text: string; readonly callback_data?: string }[])[];
}

/** An edit of a message the bot sent: its new text (editMessageText), and its keyboard afterwards (none: removed). */
export interface FakeEdit {
  readonly method: 'editMessageText' | 'editMessageReplyMarkup';
  readonly chatId: number;
  readonly messageId: number;
  readonly text: string | undefined;
  readonly entities: readonly { type: string; offset: number; length: number }[] | undefined;
  readonly replyMarkup: FakeInlineKeyboard | undefined;
  readonly businessConnectionId: string | undefined;
  readonly at: number;
}
