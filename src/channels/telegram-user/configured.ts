import { ChannelError } from '../../domain/errors.js';
import type { ChannelLeaseRepository } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';
import type { Transcribe } from '../telegram/index.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import type { TelegramNetworkOverride } from './client-factory.js';
import type { TelegramUserConfig } from './config.js';
import { CONNECTION_HEALTH_STATES } from './connection.js';
import type { TelegramUserMetrics } from './metrics.js';
import { SessionLease } from './session-lease.js';
import { TelegramSessionFile } from './session-store.js';
import { TelegramUserChannel } from './telegram-user-channel.js';

/**
 * The user-account channel as `channels.telegramUser` configures it, its health on the
 * `palaver_telegram_user_connection` gauge. Loaded only when the channel is on (mtcute is about 90 MB).
 */
export async function telegramUserChannel(
  config: TelegramUserConfig,
  deps: {
    readonly logger: Logger;
    readonly metrics: TelegramUserMetrics;
    readonly leases: ChannelLeaseRepository;
    readonly transcribe?: Transcribe;
    /** In place of Telegram's data centres (tests give the fake MTProto server's link). */
    readonly network?: TelegramNetworkOverride;
  },
): Promise<TelegramUserChannel> {
  const { apiId, apiHash, sessionFile } = config;
  if (apiId === undefined || apiHash === undefined || sessionFile === undefined) {
    throw new ChannelError('not_configured', TELEGRAM_USER_CHANNEL, 'channels.telegramUser needs apiId, apiHash and a sessionFile');
  }
  const gauge = deps.metrics.connection;
  return new TelegramUserChannel({
    apiId,
    apiHash,
    session: sessionFile,
    // No network before this: a start without a session fails at once, naming `palaver telegram login`.
    checkSignedIn: () => void new TelegramSessionFile(sessionFile).requireSignedIn(),
    // A process that died holding the session stops renewing its lease: wait for it to run out (about 3 s) and take
    // the session over, rather than refusing the start.
    acquireLease: (onLost) =>
      SessionLease.acquire({ leases: deps.leases, logger: deps.logger, onLost, ...config.lease, waitMs: config.lease.ttlMs + config.lease.retryEveryMs }),
    importHistoryOnFirstContact: config.importHistoryOnFirstContact,
    quietWindowMs: config.quietWindowMs,
    ...(config.maxWaitMs === undefined ? {} : { maxWaitMs: config.maxWaitMs }),
    floodWaitInlineMaxSeconds: config.floodWaitInlineMaxSeconds,
    answer: config.answer,
    ownerTakeoverMinutes: config.ownerTakeoverMinutes,
    ...(deps.transcribe ? { transcribe: deps.transcribe } : {}),
    onOwnerTakeover: () => deps.metrics.ownerTakeovers.inc(),
    watchTakenOverChats: (count) => deps.metrics.watchTakenOverChats(count),
    onHealth: (health) => {
      for (const state of CONNECTION_HEALTH_STATES) gauge.set({ state }, state === health ? 1 : 0);
    },
    onSignedOut: (error) => deps.metrics.signedOut.inc({ error }),
    ...(deps.network ? { network: deps.network } : {}),
    logger: deps.logger,
  });
}
