import type { TelegramClient } from '@mtcute/node';
import { z } from 'zod';
import { ChannelError } from '../../domain/errors.js';
import type { ChannelContext, ChannelRoute } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { errorBody } from '../../platform/error-body.js';
import { syncHistory } from './history-sync.js';

/** Where the running channel takes `palaver telegram sync` requests (behind the admin token). */
export const HISTORY_SYNC_PATH = '/admin/telegram-user/sync';

/** What `palaver telegram sync` asks for: the person, and which of the chat's messages. */
const syncRequest = z.strictObject({
  /** `@username`, a username, or the user id. */
  chat: z.union([z.string().trim().min(1).max(64), z.number().int().positive()]),
  after: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).max(100_000).default(1000),
});

export interface HistorySyncRouteDeps {
  /** The running client and the pipeline's context, or undefined while the channel is not connected. */
  running(): { readonly client: TelegramClient; readonly context: ChannelContext } | undefined;
  readonly logger: Logger;
}

/**
 * `POST /admin/telegram-user/sync`: stores a private chat's history without a turn, through the process that runs
 * the account. One MTProto session runs in one process, so while `palaver start` holds it, `palaver telegram sync`
 * asks this route instead of connecting itself. Answers the sync's result (`HistorySyncResult`); 400 for a request
 * or a chat it cannot sync, 503 while the account is not connected, 502 when Telegram fails.
 */
export function historySyncRoute(deps: HistorySyncRouteDeps): ChannelRoute {
  return {
    method: 'POST',
    path: HISTORY_SYNC_PATH,
    access: 'admin',
    maxBodyBytes: 4_096,
    async handle(request) {
      const body = syncRequest.safeParse(await request.json().catch(() => undefined));
      if (!body.success)
        return answer(400, errorBody('invalid_request', 'Send { "chat": "@username" or a user id, "after"?: message id, "limit"?: 1 to 100000 }.'));
      const running = deps.running();
      if (!running) return answer(503, errorBody('not_connected', 'The Telegram user account is not connected in this process right now; try again shortly.'));
      const { chat, after, limit } = body.data;
      try {
        const result = await syncHistory(running.client, chat, (conversation, entries) => running.context.record(conversation, entries), {
          limit,
          ...(after === undefined ? {} : { after }),
        });
        deps.logger.info({ chatId: result.user.id, fetched: result.fetched, stored: result.stored }, 'history synced through the admin API');
        return answer(200, result);
      } catch (failure) {
        if (failure instanceof ChannelError) return answer(400, errorBody(failure.code, failure.message));
        deps.logger.warn({ err: failure }, 'history sync through the admin API failed');
        // Operators only (the admin token): Telegram's error name (USERNAME_NOT_OCCUPIED…) says what to fix.
        return answer(502, errorBody('telegram_failed', `Telegram refused the sync: ${failure instanceof Error ? failure.message : String(failure)}`));
      }
    },
  };
}

function answer(status: number, body: unknown): Response {
  return Response.json(body, { status });
}
