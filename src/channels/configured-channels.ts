import type { Channel } from '../domain/ports/channel.js';
import type { ChannelDeps } from './channel-plugin.js';
import { channelPlugins, sliceOf } from './registry.js';

/** A channel's own line in `/health`. */
export type ChannelHealthCheck = () => { ok: boolean; detail?: string };

/**
 * The channels `config.channels` turns on, in the registry's order; each plug-in loads its channel's code only when
 * it is on. `deps.logger` is the Palaver's: each channel gets a child with its name.
 */
export async function configuredChannels(deps: ChannelDeps): Promise<{ channels: Channel[]; healthChecks: Record<string, ChannelHealthCheck> }> {
  const channels: Channel[] = [];
  const healthChecks: Record<string, ChannelHealthCheck> = {};
  for (const plugin of channelPlugins) {
    const settings = sliceOf(deps.config.channels, plugin);
    if (!plugin.isEnabled(settings)) continue;
    const created = await plugin.create(settings, { ...deps, logger: deps.logger.child({ channel: plugin.name }) });
    channels.push(created.channel);
    if (created.health) healthChecks[plugin.name] = created.health;
  }
  return { channels, healthChecks };
}
