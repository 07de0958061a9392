import { conversationIdOf } from '../../src/channels/telegram-bot/address.js';
import { TelegramBotChannel } from '../../src/channels/telegram-bot/index.js';
import { systemText, type SystemTextKey } from '../../src/i18n/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer } from '../../src/server/index.js';
import { startFakeTelegram } from '../../src/testing/index.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';

const SECRET = 'contract-webhook-secret';
/** The notices the channel sends of its own when the pipeline refuses a message: what the person reads as an error. */
const NOTICES = new Set(
  (['inbox.busy', 'inbound.tooLong', 'inbound.unreadable', 'identity.unavailable', 'identity.unrecognised', 'reset.forbidden'] as SystemTextKey[]).map((key) =>
    systemText('en', key),
  ),
);
const CHATS: Record<string, number> = { c1: 1001, c2: 1002 };

/**
 * People in private Telegram chats (`c1`, `c2`) with the bot, through grammY against the fake Bot API: what they
 * see is what the bot sent to their chat (drafts are only previews).
 */
async function telegramDriver(mode: 'polling' | 'webhook'): Promise<ChannelDriver> {
  const telegram = await startFakeTelegram();
  const channel = new TelegramBotChannel({
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    mode,
    webhookSecret: SECRET,
    drafts: true,
    draftIntervalMs: 0,
    logger: silentLogger(),
  });
  const server =
    mode === 'webhook'
      ? await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), { host: '127.0.0.1', port: 0 })
      : undefined;
  const chat = (name: string): number => CHATS[name] ?? Number.NaN;
  const shown = (name: string) => telegram.sentTo(chat(name)).map((message) => message.text);
  /** Polling: the update waits at Telegram until the bot fetches it. Webhook: Telegram posts it; 200 means taken. */
  const say = async (name: string, text: string): Promise<number | undefined> => {
    const update = telegram.sendText({ chatId: chat(name), text });
    if (!server) return undefined;
    const response = await fetch(`${server.url}/telegram/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': SECRET },
      body: JSON.stringify(update),
    });
    await response.arrayBuffer();
    return response.status;
  };
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    conversationId: (name) => conversationIdOf({ chatId: chat(name) }),
    say: async (name, text) => {
      const status = await say(name, text);
      if (status !== undefined && status !== 200) throw new Error(`the webhook answered ${status}`);
    },
    replies: (name) => shown(name).filter((text) => !NOTICES.has(text)),
    errors: (name) => shown(name).filter((text) => NOTICES.has(text)),
    waiting: () => 0,
    async sayAfterStop(name, text) {
      const status = await say(name, text);
      if (status !== undefined && status !== 503) throw new Error(`after stop the webhook answered ${status}, not 503`);
      // Polling: the poller ended with stop, so nothing fetches the update.
      if (channel.isPolling) throw new Error('the channel still polls after stop');
    },
    async close() {
      await server?.close();
      await telegram.close();
    },
  };
}

runChannelContract('telegram bot (long polling)', () => telegramDriver('polling'));
runChannelContract('telegram bot (webhook)', () => telegramDriver('webhook'));
