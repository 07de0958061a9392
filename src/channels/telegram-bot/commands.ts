import { createHash } from 'node:crypto';
import type { Api } from 'grammy';
import type { ChannelStateStore } from '../../domain/ports/channel.js';
import type { Logger } from '../../observability/logger.js';
import { SYSTEM_TEXT_LANGUAGES, systemText } from '../../i18n/index.js';

/**
 * Registers the bot's commands (`/start`, `/reset`), description and short description, in English (the default)
 * and in each catalogue language, but only when they differ from what was registered last (a hash in the channel's
 * state, per bot): a restart loop must not earn a long 429 for setMyCommands. A failure is logged, not fatal.
 */
export async function registerCommands(api: Api, state: ChannelStateStore, botId: number, agentName: string, logger: Logger): Promise<void> {
  const spec = SYSTEM_TEXT_LANGUAGES.map((language) => ({
    language,
    commands: [
      { command: 'start', description: systemText(language, 'telegram.commandStart') },
      { command: 'reset', description: systemText(language, 'telegram.commandReset') },
    ],
    description: systemText(language, 'telegram.description', { name: agentName }).slice(0, 512),
    shortDescription: systemText(language, 'telegram.shortDescription', { name: agentName }).slice(0, 120),
  }));
  const hash = createHash('sha256').update(JSON.stringify(spec)).digest('hex');
  const key = `commands-hash:${botId}`;
  if ((await state.get(key)) === hash) return;
  try {
    for (const entry of spec) {
      // English is the default for every language without its own list.
      const language = entry.language === 'en' ? {} : { language_code: entry.language };
      await api.setMyCommands(entry.commands, language);
      await api.setMyDescription(entry.description, language);
      await api.setMyShortDescription(entry.shortDescription, language);
    }
    await state.set(key, hash);
    logger.info({ botId }, 'telegram bot commands and description registered');
  } catch (error) {
    logger.warn({ err: error, botId }, 'telegram bot commands could not be registered; trying again at the next start');
  }
}
