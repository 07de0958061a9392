import { EventEmitter } from 'node:events';
import type { FakeCall, FakeEdit, FakeReaction, FakeSentMessage, FakeUpdate, FakeUser } from './types.js';

/**
 * What the fake Telegram knows: the bot, the updates people sent, the calls the bot made and the messages it sent,
 * files, commands, business connections, the webhook and the polling offset. Events: `update` (enqueued), `call`
 * (recorded), `sent` (a message sent), `released` (a method stopped hanging).
 */
export class FakeTelegramState {
  readonly token: string;
  readonly bot: FakeUser & { readonly username: string; readonly is_bot: true };
  readonly events = new EventEmitter();
  readonly calls: FakeCall[] = [];
  readonly sent: FakeSentMessage[] = [];
  /** Reactions the bot set (setMessageReaction accepted), in order. */
  readonly reactions: FakeReaction[] = [];
  /** Edits of the bot's messages Telegram accepted, in order. */
  readonly edits: FakeEdit[] = [];
  #nextCallbackId = 1;
  readonly updates: FakeUpdate[] = [];
  readonly files = new Map<string, { bytes: Uint8Array; path: string; mimeType: string }>();
  readonly commands = new Map<string, { command: string; description: string }[]>();
  readonly connections = new Map<string, { enabled: boolean }>();
  readonly nextMessageId = new Map<number, number>();
  /** The message ids that exist in each chat (people's and the bot's): what a reaction or a quote may name. */
  readonly messageIds = new Map<number, Set<number>>();
  /**
   * Where this fake's ids start: from the clock, so a fake started again against the same database (a rerun, a
   * restart in a test) never repeats an id. A repeated message id would be dropped as a duplicate, and an update id
   * below the polling offset the channel stored would never be delivered.
   */
  readonly firstId = idBase();
  nextUpdateId = this.firstId;
  #nextFileId = 1;
  /** Telegram forgets updates below this offset (the last `getUpdates` offset, or all at `drop_pending_updates`). */
  confirmedOffset = 0;
  /** While true, every getUpdates answers 409 Conflict. */
  conflict = false;
  webhook: { url: string; secretToken: string | undefined } | undefined;
  /** The getUpdates request waiting for updates, if any: a new one terminates it with 409, as Telegram does. */
  pendingPoll: { conflict: () => void } | undefined;

  constructor(options: { token?: string; botUsername?: string }) {
    this.token = options.token ?? '123456789:FAKE-telegram-token_for-tests';
    this.bot = { id: Number(this.token.split(':')[0]), is_bot: true, first_name: 'Palaver Test', username: options.botUsername ?? 'palaver_test_bot' };
    this.events.setMaxListeners(0);
  }

  /** The message id `given`, or the chat's next one; ids only grow per chat. The message exists from now on. */
  messageIdFor(chatId: number, given?: number): number {
    const next = given ?? this.nextMessageId.get(chatId) ?? this.firstId;
    this.nextMessageId.set(chatId, Math.max(next + 1, this.nextMessageId.get(chatId) ?? this.firstId));
    this.#exists(chatId, next);
    return next;
  }

  /** Whether a message with this id exists in the chat. */
  hasMessage(chatId: number, messageId: number): boolean {
    return this.messageIds.get(chatId)?.has(messageId) ?? false;
  }

  #exists(chatId: number, messageId: number): void {
    const ids = this.messageIds.get(chatId) ?? new Set<number>();
    ids.add(messageId);
    this.messageIds.set(chatId, ids);
  }

  enqueue(update: Omit<FakeUpdate, 'update_id'> & { update_id?: number }): FakeUpdate {
    const full = { ...update, update_id: update.update_id ?? this.nextUpdateId++ } as FakeUpdate;
    // An update built by hand (not by the people helpers) still brings its message into the chat.
    for (const key of ['message', 'business_message', 'edited_message']) {
      const message = full[key] as { message_id?: unknown; chat?: { id?: unknown } } | undefined;
      if (typeof message?.message_id === 'number' && typeof message.chat?.id === 'number') this.#exists(message.chat.id, message.message_id);
    }
    this.updates.push(full);
    this.events.emit('update');
    return full;
  }

  /** A fresh callback query id. */
  callbackQueryId(): string {
    return `cbq-${this.firstId}-${this.#nextCallbackId++}`;
  }

  /** A file served through getFile and `/file/bot<token>/<path>`. */
  addFile(bytes: Uint8Array, mimeType: string, extension: string): { file_id: string; file_unique_id: string; file_size: number } {
    const id = `file-${this.#nextFileId++}`;
    this.files.set(id, { bytes, path: `voice/${id}.${extension}`, mimeType });
    return { file_id: id, file_unique_id: `u${id}`, file_size: bytes.byteLength };
  }
}

/** Milliseconds since 2023-11-14 × 1000: grows between two fakes even within one millisecond of each other. */
let lastBase = 0;
function idBase(): number {
  lastBase = Math.max(lastBase + 1_000, (Date.now() - 1_700_000_000_000) * 1_000);
  return lastBase;
}
