import { EventEmitter } from 'node:events';
import type { FakeCall, FakeSentMessage, FakeUpdate, FakeUser } from './types.js';

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
  readonly updates: FakeUpdate[] = [];
  readonly files = new Map<string, { bytes: Uint8Array; path: string; mimeType: string }>();
  readonly commands = new Map<string, { command: string; description: string }[]>();
  readonly connections = new Map<string, { enabled: boolean }>();
  readonly nextMessageId = new Map<number, number>();
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

  /** The message id `given`, or the chat's next one; ids only grow per chat. */
  messageIdFor(chatId: number, given?: number): number {
    const next = given ?? this.nextMessageId.get(chatId) ?? this.firstId;
    this.nextMessageId.set(chatId, Math.max(next + 1, this.nextMessageId.get(chatId) ?? this.firstId));
    return next;
  }

  enqueue(update: Omit<FakeUpdate, 'update_id'> & { update_id?: number }): FakeUpdate {
    const full = { ...update, update_id: update.update_id ?? this.nextUpdateId++ } as FakeUpdate;
    this.updates.push(full);
    this.events.emit('update');
    return full;
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
