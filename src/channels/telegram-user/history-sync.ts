import type { Message, TelegramClient, User } from '@mtcute/node';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelContext, RecordedMessage } from '../../domain/ports/channel.js';
import { describeMedia, withTranscript } from '../telegram/index.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import { readBody } from './read-message.js';

/** How many messages one `record` call stores: a page of history, one transaction, not the whole dialog at once. */
const RECORD_BATCH = 100;

/** Telegram's own service account (login codes, security notices): never a conversation. */
const SERVICE_USER_ID = 777000;

export interface HistorySyncOptions {
  /** Only messages with a greater id (an earlier sync's last id). */
  readonly after?: number;
  /** Only messages with a smaller id (first contact: the history before the message that just arrived). */
  readonly before?: number;
  /** At most this many messages, the newest of the range (service messages and empty ones do not count). */
  readonly limit: number;
}

export interface HistorySyncResult {
  /** The person the private chat is with. */
  readonly user: { readonly id: number; readonly displayName: string; readonly username: string | null };
  /** Messages read from Telegram that had something to store (service messages and empty ones are skipped). */
  readonly fetched: number;
  /** Of those, how many were new to the conversation (the rest were stored already). */
  readonly stored: number;
  readonly firstId: number | undefined;
  readonly lastId: number | undefined;
}

/**
 * Fetches a private chat's messages (both sides) and stores them in its conversation without a turn: in order, each
 * by its Telegram message id so that a second sync stores nothing new, marked `imported`. Nothing is sent and no model
 * is asked. Used by `palaver telegram sync` and, with `importHistoryOnFirstContact`, before a chat's first turn.
 * @param chat a user id, or a username with or without @.
 * @throws ChannelError `not_private` for a group, channel, bot or Telegram's service account.
 */
export async function syncHistory(
  client: TelegramClient,
  chat: number | string,
  record: ChannelContext['record'],
  options: HistorySyncOptions,
): Promise<HistorySyncResult> {
  const user = await privateChatUser(client, chat);
  const entries = (await fetchNewestFirst(client, user, options)).reverse();
  let stored = 0;
  const conversation = { accountId: String(user.id), displayName: user.displayName, conversationId: String(user.id), conversationKind: 'direct' as const };
  for (let start = 0; start < entries.length; start += RECORD_BATCH) {
    stored += (await record(conversation, entries.slice(start, start + RECORD_BATCH))).stored;
  }
  return {
    user: { id: user.id, displayName: user.displayName, username: user.username },
    fetched: entries.length,
    stored,
    firstId: entries.length > 0 ? Number(entries[0]!.messageId) : undefined,
    lastId: entries.length > 0 ? Number(entries.at(-1)!.messageId) : undefined,
  };
}

/** The `ChannelContext.state` key that marks a chat's history as imported. */
export function historyImportedKey(chatId: number): string {
  return `history-imported:${chatId}`;
}

/**
 * `importHistoryOnFirstContact`: before a chat's first turn, stores its last `limit` messages before `beforeId` (the
 * message that just arrived, which comes through `accept`). Runs once per chat (a mark in the channel's state, set
 * after the import), so a restart does not fetch again; a failed import is logged by the caller and not retried.
 * @returns the sync result, or undefined when the chat was imported before or `limit` is 0.
 */
export async function importOnFirstContact(
  client: TelegramClient,
  context: Pick<ChannelContext, 'record' | 'state'>,
  chatId: number,
  beforeId: number,
  limit: number,
): Promise<HistorySyncResult | undefined> {
  if (limit <= 0 || (await context.state.get(historyImportedKey(chatId))) !== undefined) return undefined;
  const result = await syncHistory(client, chatId, context.record, { before: beforeId, limit });
  await context.state.set(historyImportedKey(chatId), new Date().toISOString());
  return result;
}

async function privateChatUser(client: TelegramClient, chat: number | string): Promise<User> {
  const peer = typeof chat === 'number' ? chat : /^-?\d+$/.test(chat.trim()) ? Number(chat.trim()) : chat.trim().replace(/^@/, '');
  if (typeof peer === 'number' && peer <= 0) throw notPrivate(String(chat), 'a group or channel');
  const input = await client.resolvePeer(peer);
  if (input._ !== 'inputPeerUser' && input._ !== 'inputPeerSelf') throw notPrivate(String(chat), 'a group or channel');
  const user = await client.getUser(input);
  if (user.isBot) throw notPrivate(String(chat), 'a bot');
  if (user.id === SERVICE_USER_ID) throw notPrivate(String(chat), "Telegram's service account");
  if (user.isSelf) throw notPrivate(String(chat), 'the account itself (Saved Messages)');
  return user;
}

function notPrivate(chat: string, what: string): ChannelError {
  return new ChannelError(
    'not_private',
    TELEGRAM_USER_CHANNEL,
    `${chat} is ${what}: the Telegram user account keeps the history of private chats with people only.`,
  );
}

/**
 * The newest `limit` messages in range that have something to store, newest first (Telegram's own order, the way
 * `getHistory` pages reliably); service messages and empty ones do not count.
 */
async function fetchNewestFirst(client: TelegramClient, user: User, options: HistorySyncOptions): Promise<RecordedMessage[]> {
  const seen = new Set<number>();
  const entries: RecordedMessage[] = [];
  if (options.limit <= 0) return entries;
  for await (const message of client.iterHistory(user.id, { minId: options.after ?? 0, maxId: options.before ?? 0 })) {
    // Telegram's min_id / max_id bounds are exclusive; checked here too, whatever the server did.
    if (options.after !== undefined && message.id <= options.after) continue;
    if (options.before !== undefined && message.id >= options.before) continue;
    if (seen.has(message.id)) continue;
    seen.add(message.id);
    entries.push(...toRecorded(message));
    if (entries.length >= options.limit) break;
  }
  return entries;
}

/**
 * A message as history, read as the live channel reads it (caption after its media's description, a contact card, …;
 * src/channels/telegram/ via read-message.ts), speech described rather than transcribed (nobody waits for an answer);
 * nothing for service messages and empty ones. Replies are not quoted: that would cost one request per reply.
 */
function toRecorded(message: Message): RecordedMessage[] {
  const body = readBody(message);
  if (body === undefined) return [];
  const text = (body.audio ? withTranscript(body.text, describeMedia(body.audio.media)) : body.text).trim();
  if (text === '') return [];
  return [{ role: message.isOutgoing ? 'assistant' : 'user', text, messageId: String(message.id), at: message.date, source: 'imported' }];
}
