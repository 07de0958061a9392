import { resolve } from 'node:path';
import type { ChannelPlugin } from '../channel-plugin.js';
import type { TranscriptionSettings } from '../telegram/transcription-settings.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';
import type { TelegramNetworkOverride } from './client-factory.js';
import { telegramUserConfigSchema, telegramUserEnabled } from './config.js';
import { TelegramUserMetrics } from './metrics.js';

/** Name of the account's session file, when `channels.telegramUser.sessionFile` is not set. */
export const TELEGRAM_SESSION_FILE_NAME = 'telegram-user.session';

/**
 * A person's own Telegram account (`channels.telegramUser`, MTProto): on when `apiId` and `apiHash` are set and it
 * is not turned off. Its connection state is its line in `/health`.
 */
// Typed, not inferred: the config's type is built from the registry, and `create` reads the config.
export const telegramUserPlugin: ChannelPlugin<'telegramUser', typeof telegramUserConfigSchema, TelegramUserMetrics> = {
  name: TELEGRAM_USER_CHANNEL,
  configKey: 'telegramUser',
  configSchema: telegramUserConfigSchema,
  isEnabled: telegramUserEnabled,
  async create(settings, { config, logger, metrics, store, transcriber, overrides }) {
    const { telegramUserChannel } = await import('./configured.js');
    // The bot's transcription settings unless channels.telegramUser.transcription names others. The bot's slice is
    // another plug-in's (one this folder may not import): read by its shape.
    const bot = (config.channels as { readonly telegram: { readonly transcription: TranscriptionSettings } }).telegram;
    const transcribe = transcriber(settings.transcription ?? bot.transcription);
    const network = overrides?.[TELEGRAM_USER_CHANNEL] as TelegramNetworkOverride | undefined;
    const channel = await telegramUserChannel(settings, {
      logger,
      metrics: metrics.channel(telegramUserPlugin),
      leases: store.channelLeases,
      transcribe,
      ...(network ? { network } : {}),
    });
    return {
      channel,
      health: () => {
        const { state, detail } = channel.health;
        return { ok: state === 'connected', detail: detail === undefined || state === 'connected' ? state : `${state}: ${detail}` };
      },
    };
  },
  metrics: (prom, registry) => new TelegramUserMetrics(prom, registry),
  // A sign-in outlives any one database: beside the SQLite file, else in `data/` of the config folder.
  resolvePaths: (settings, { baseDir, dataDir }) => ({
    ...settings,
    sessionFile: resolve(baseDir, settings.sessionFile ?? resolve(dataDir ?? resolve(baseDir, 'data'), TELEGRAM_SESSION_FILE_NAME)),
  }),
};
