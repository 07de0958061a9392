import type { ChannelPlugin } from '../channel-plugin.js';
import { TELEGRAM_BOT_CHANNEL } from './address.js';
import { telegramBotConfigSchema } from './config.js';

/** The Telegram bot (`channels.telegram`, grammY): on when a token is set and it is not turned off. */
// Typed, not inferred: the config's type is built from the registry, and `create` reads the config.
export const telegramBotPlugin: ChannelPlugin<'telegram', typeof telegramBotConfigSchema> = {
  name: TELEGRAM_BOT_CHANNEL,
  configKey: 'telegram',
  configSchema: telegramBotConfigSchema,
  isEnabled: (settings) => settings.enabled && settings.token !== undefined,
  async create(telegram, { config, logger, metrics, store, transcriber, fetch }) {
    const { TelegramBotChannel } = await import('./telegram-bot-channel.js');
    return {
      channel: new TelegramBotChannel({
        token: telegram.token!,
        apiRoot: telegram.apiRoot,
        mode: telegram.mode ?? (telegram.webhookUrl ? 'webhook' : 'polling'),
        ...(telegram.webhookUrl ? { webhookUrl: telegram.webhookUrl } : {}),
        ...(telegram.webhookSecret ? { webhookSecret: telegram.webhookSecret } : {}),
        quietWindowMs: telegram.quietWindowMs,
        ...(telegram.maxWaitMs === undefined ? {} : { maxWaitMs: telegram.maxWaitMs }),
        groupAnswer: telegram.groups.answer,
        // The operators' chat is told of handoffs through this bot; what operators write there is not for the agent.
        ...(config.operators.notify.telegramChatId === undefined ? {} : { ignoredChats: [config.operators.notify.telegramChatId] }),
        drafts: telegram.drafts,
        maxUpdateAttempts: telegram.maxUpdateAttempts,
        floodWaitInlineMaxSeconds: telegram.floodWaitInlineMaxSeconds,
        onDeadLetter: (reason) => metrics.deadLetters.inc({ channel: TELEGRAM_BOT_CHANNEL, reason }),
        // One poller among several processes on this database; the others stand by (docs/telegram-several-processes.md).
        pollingLease: { leases: store.channelLeases, timings: telegram.lease },
        transcribe: transcriber(telegram.transcription),
        agentName: config.agent.name,
        fetch,
        logger,
      }),
    };
  },
};
