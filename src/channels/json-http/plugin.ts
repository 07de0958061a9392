import type { ChannelPlugin } from '../channel-plugin.js';
import { jsonHttpConfigSchema } from './config.js';

/** JSON over HTTP for your own backend (`channels.jsonHttp`); see docs/writing-a-channel.md, which builds it. */
export const jsonHttpPlugin: ChannelPlugin<'jsonHttp', typeof jsonHttpConfigSchema> = {
  name: 'json-http',
  configKey: 'jsonHttp',
  configSchema: jsonHttpConfigSchema,
  isEnabled: (settings) => settings.enabled,
  async create(settings) {
    // Loaded only when the channel is on.
    const { JsonHttpChannel } = await import('./json-http-channel.js');
    return { channel: new JsonHttpChannel(settings) };
  },
};
