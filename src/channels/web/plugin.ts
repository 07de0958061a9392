import { resolve } from 'node:path';
import type { ChannelPlugin } from '../channel-plugin.js';
import { webConfigSchema } from './config.js';
import { WEB_CHANNEL } from './web-constants.js';

/** Name of the file that keeps a generated cookie secret, when `channels.web.cookieSecretFile` is not set. */
export const COOKIE_SECRET_FILE_NAME = 'web-cookie-secret';

/** The web chat page and AG-UI over SSE (`channels.web`): on unless turned off. */
// Typed, not inferred: the config's type is built from the registry, and `create` reads the config.
export const webPlugin: ChannelPlugin<'web', typeof webConfigSchema> = {
  name: WEB_CHANNEL,
  configKey: 'web',
  configSchema: webConfigSchema,
  isEnabled: (settings) => settings.enabled,
  async create(settings, { config, logger, bus, onSecret }) {
    const { WebChannel } = await import('./web-channel.js');
    const { enabled: _enabled, ...web } = settings;
    return {
      channel: new WebChannel({
        ...web,
        agentName: config.agent.name,
        language: config.agent.language,
        maxInboundChars: config.limits.maxInboundChars,
        showToolDetails: config.server.showToolDetails,
        apiKey: config.server.apiKey,
        serverHost: config.server.host,
        logger,
        onSecret,
        bus,
      }),
    };
  },
  allowedHosts: (settings) => settings.allowedHosts ?? [],
  // A generated cookie secret is kept beside the SQLite file (in `data/` for PostgreSQL); with an in-memory
  // database it stays in memory too, since its visitors cannot outlive the database anyway.
  resolvePaths: ({ cookieSecretFile, ...settings }, { baseDir, dataDir }) => {
    const file =
      cookieSecretFile === undefined ? (dataDir === undefined ? undefined : resolve(dataDir, COOKIE_SECRET_FILE_NAME)) : resolve(baseDir, cookieSecretFile);
    return { ...settings, ...(file === undefined ? {} : { cookieSecretFile: file }) };
  },
};
