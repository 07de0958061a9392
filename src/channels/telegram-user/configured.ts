import { existsSync, statSync } from 'node:fs';
import type { PalaverConfig } from '../../config/index.js';
import { ChannelError } from '../../domain/errors.js';
import type { Logger } from '../../observability/logger.js';
import type { PalaverMetrics } from '../../observability/metrics.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import { CONNECTION_HEALTH_STATES } from './connection.js';
import { TelegramUserChannel } from './telegram-user-channel.js';

/**
 * The user-account channel as `channels.telegramUser` configures it, its health on the
 * `palaver_telegram_user_connection` gauge. Loaded only when the channel is on (mtcute is about 90 MB).
 */
export async function telegramUserChannel(
  config: PalaverConfig['channels']['telegramUser'],
  deps: { readonly logger: Logger; readonly metrics: PalaverMetrics },
): Promise<TelegramUserChannel> {
  const { apiId, apiHash, sessionFile } = config;
  if (apiId === undefined || apiHash === undefined || sessionFile === undefined) {
    throw new ChannelError('not_configured', TELEGRAM_USER_CHANNEL, 'channels.telegramUser needs apiId, apiHash and a sessionFile');
  }
  // Tests only: the fake MTProto server of src/testing, over loopback, instead of Telegram.
  const network = config.fakeServerUrl === undefined ? undefined : (await import('../../testing/fake-mtproto/remote-link.js')).remoteFakeMtprotoLink(config.fakeServerUrl);
  const gauge = deps.metrics.telegramUserConnection;
  return new TelegramUserChannel({
    apiId,
    apiHash,
    session: sessionFile,
    checkSignedIn: () => requireSession(sessionFile),
    quietWindowMs: config.quietWindowMs,
    ...(config.maxWaitMs === undefined ? {} : { maxWaitMs: config.maxWaitMs }),
    floodWaitInlineMaxSeconds: config.floodWaitInlineMaxSeconds,
    onHealth: (health) => {
      for (const state of CONNECTION_HEALTH_STATES) gauge.set({ state }, state === health ? 1 : 0);
    },
    onSignedOut: (error) => deps.metrics.telegramUserSignedOut.inc({ error }),
    ...(network ? { network } : {}),
    logger: deps.logger,
  });
}

/**
 * Fails at once, before any network, when nobody signed in. PLACEHOLDER for h5's `TelegramSessionFile.requireSignedIn`
 * (which reads the signed-in user from the file): here only the file's presence is checked.
 */
function requireSession(sessionFile: string): void {
  if (existsSync(sessionFile) && statSync(sessionFile).size > 0) return;
  throw new ChannelError(
    'not_signed_in',
    TELEGRAM_USER_CHANNEL,
    `The Telegram user account is not signed in (no session in ${sessionFile}). Sign in once with: palaver telegram login`,
  );
}
