import type { Kysely } from 'kysely';
import { StoreError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { RecordedMessageRepository, RecordedNewMessage, RecordingTarget } from '../../domain/ports/store.js';
import { KyselyMessageRepository } from './message-repository.js';
import { atomically, type RepositoryContext } from './repository-context.js';
import type { Database } from './schema.js';
import { classifyDriverError, storeOperation } from './store-errors.js';

/** Ids looked up per query: far below every dialect's bound-parameter limit. */
const IDS_PER_QUERY = 500;

/** Messages stored without a turn, each channel message id once per conversation (see the port). */
export class KyselyRecordedMessageRepository implements RecordedMessageRepository {
  readonly #ctx: RepositoryContext;

  constructor(ctx: RepositoryContext) {
    this.#ctx = ctx;
  }

  /**
   * Looks the ids up (recorded, and accepted through the inbox), then claims each new one by inserting its key: the
   * primary key decides between two calls at once (on PostgreSQL the second waits for the first and then skips it).
   * The messages whose key this call inserted are appended in the same transaction.
   */
  append(target: RecordingTarget, messages: readonly RecordedNewMessage[]): Promise<StoredMessage[]> {
    return storeOperation('recorded.append', async () => {
      if (messages.length === 0) return [];
      try {
        return await atomically(this.#ctx.db, async (db) => {
          const known = await knownIds(db, target, [...new Set(messages.map((message) => message.channelMessageId))]);
          const now = this.#ctx.now();
          const candidates = new Map<string, NewMessage & { readonly id: string }>();
          for (const { channelMessageId, ...message } of messages) {
            if (!known.has(channelMessageId) && !candidates.has(channelMessageId)) candidates.set(channelMessageId, { ...message, id: message.id ?? newId() });
          }
          // Claimed in key order: two calls at once on PostgreSQL wait for each other, never in a circle.
          const claimed = new Set<string>();
          for (const channelMessageId of [...candidates.keys()].sort()) {
            const inserted = await this.#ctx.dialect
              .insertOrIgnore(
                db.insertInto('recorded_messages').values({
                  channel: target.channel,
                  conversation_id: target.conversationId,
                  message_id: channelMessageId,
                  session_id: target.sessionId,
                  stored_message_id: candidates.get(channelMessageId)!.id,
                  account_namespace: target.accountNamespace,
                  account_id: target.accountId,
                  user_id: target.userId,
                  recorded_at: now,
                }),
                ['channel', 'conversation_id', 'message_id'],
              )
              .executeTakeFirst();
            if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) claimed.add(channelMessageId);
          }
          // Appended in the order given.
          const fresh = [...candidates].filter(([channelMessageId]) => claimed.has(channelMessageId)).map(([, message]) => message);
          if (fresh.length === 0) return [];
          return new KyselyMessageRepository({ ...this.#ctx, db }).append(target.sessionId, fresh);
        });
      } catch (error) {
        if (classifyDriverError(error) === 'foreign_key')
          throw new StoreError('not_found', `Session ${target.sessionId} does not exist; open it before recording into it.`, { cause: error });
        throw error;
      }
    });
  }
}

/** Which of `ids` the conversation already holds: recorded before, or accepted through the inbox with that message id. */
async function knownIds(db: Kysely<Database>, target: RecordingTarget, ids: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>();
  for (let start = 0; start < ids.length; start += IDS_PER_QUERY) {
    const chunk = ids.slice(start, start + IDS_PER_QUERY);
    const recorded = await db
      .selectFrom('recorded_messages')
      .select('message_id')
      .where('channel', '=', target.channel)
      .where('conversation_id', '=', target.conversationId)
      .where('message_id', 'in', chunk)
      .execute();
    const accepted = await db
      .selectFrom('inbound_messages')
      .select('message_id')
      .where('channel', '=', target.channel)
      .where('conversation_id', '=', target.conversationId)
      .where('message_id', 'in', chunk)
      .execute();
    for (const row of recorded) known.add(row.message_id);
    for (const row of accepted) if (row.message_id !== null) known.add(row.message_id);
  }
  return known;
}
