import { timingSafeEqual } from 'node:crypto';
import type { Update } from 'grammy/types';
import type { ChannelRoute } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import type { BotUpdates } from './updates.js';
import { malformation } from './update-shape.js';

export interface WebhookRouteOptions {
  /** Every request must carry it in `X-Telegram-Bot-Api-Secret-Token`; without one configured, all are refused. */
  readonly secret: string | undefined;
  readonly updates: BotUpdates;
  /** False before the channel started and after it stopped: updates are then refused with 503 (Telegram retries). */
  readonly accepting: () => boolean;
  /** Deliveries of one failing update before it is kept as a dead letter and acknowledged. */
  readonly maxUpdateAttempts: number;
  readonly logger: Logger;
}

/**
 * `POST /telegram/webhook`: the secret checked, the update stored, then 200; anything else makes Telegram deliver
 * it again. A malformed update is kept as a dead letter at once (400); one that failed `maxUpdateAttempts`
 * deliveries is kept as a dead letter and answered 200, so Telegram stops delivering it.
 */
export function webhookRoute(options: WebhookRouteOptions): ChannelRoute {
  /** Webhook deliveries of updates that failed, by update id, so a redelivered update is not retried forever. */
  const attempts = new Map<number, number>();
  const { logger, updates } = options;

  async function handle(request: Request, remoteAddress: string | undefined): Promise<Response> {
    const expected = options.secret;
    const given = request.headers.get('x-telegram-bot-api-secret-token');
    if (!expected || given === null || !sameSecret(given, expected)) {
      logger.warn({ remoteAddress, hasHeader: given !== null }, 'telegram webhook request refused: missing or wrong X-Telegram-Bot-Api-Secret-Token');
      return Response.json({ error: { code: 'unauthorized', message: 'Missing or wrong X-Telegram-Bot-Api-Secret-Token.' } }, { status: 401 });
    }
    if (!options.accepting()) {
      return Response.json({ error: { code: 'channel_stopped', message: 'The Telegram channel is not accepting updates right now.' } }, { status: 503 });
    }
    let update: Update;
    try {
      update = (await request.json()) as Update;
      if (typeof update !== 'object' || update === null || !Number.isInteger(update.update_id)) throw new Error('no update_id');
    } catch {
      return Response.json({ error: { code: 'invalid_update', message: 'The body is not a Telegram update.' } }, { status: 400 });
    }
    const problem = malformation(update);
    if (problem !== undefined) {
      await updates
        .giveUp(update, 'malformed', problem, 0)
        .catch((error: unknown) => logger.error({ err: error, updateId: update.update_id }, 'malformed telegram update could not be kept as a dead letter'));
      return Response.json({ error: { code: 'invalid_update', message: `The body is not a Telegram update: ${problem}` } }, { status: 400 });
    }
    try {
      await updates.handle(update);
      attempts.delete(update.update_id);
    } catch (error) {
      const count = (attempts.get(update.update_id) ?? 0) + 1;
      if (count >= options.maxUpdateAttempts) {
        try {
          await updates.giveUp(update, 'failed', error, count);
          attempts.delete(update.update_id);
          // Given up and kept: Telegram must stop delivering it.
          return Response.json({}, { status: 200 });
        } catch (keepError) {
          logger.error({ err: keepError, updateId: update.update_id }, 'telegram update could not be kept as a dead letter either');
        }
      }
      rememberAttempt(attempts, update.update_id, count);
      logger.error({ err: error, updateId: update.update_id, attempts: count }, 'telegram webhook update could not be stored; Telegram will deliver it again');
      return Response.json({ error: { code: 'not_stored', message: 'The update could not be stored; deliver it again.' } }, { status: 500 });
    }
    return Response.json({}, { status: 200 });
  }

  return {
    method: 'POST',
    path: '/telegram/webhook',
    access: 'public',
    maxBodyBytes: 1024 * 1024,
    handle: (request, info) => handle(request, info.remoteAddress),
  };
}

/** Remembers a failed delivery's count; the oldest entries go past 1000 (ids Telegram no longer redelivers). */
function rememberAttempt(attempts: Map<number, number>, updateId: number, count: number): void {
  attempts.delete(updateId);
  attempts.set(updateId, count);
  for (const oldest of attempts.keys()) {
    if (attempts.size <= 1_000) break;
    attempts.delete(oldest);
  }
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
