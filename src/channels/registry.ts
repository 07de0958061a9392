import { z } from 'zod';
import type { ChannelPlugin, ChannelSettings } from './channel-plugin.js';
import { jsonHttpPlugin } from './json-http/plugin.js';
import { telegramBotPlugin } from './telegram-bot/plugin.js';
import { telegramUserPlugin } from './telegram-user/plugin.js';
import { webPlugin } from './web/plugin.js';

/**
 * The channels Palaver can run from its config, one plug-in per folder. Adding a channel is its folder (with a
 * `plugin.ts`) and one line here; the config schema, `createPalaver`, the metrics and the CLI read this list. The
 * order is the order of the config keys, of channel start-up and of the metrics.
 */
export const CHANNEL_PLUGINS = [webPlugin, telegramBotPlugin, telegramUserPlugin, jsonHttpPlugin] as const;

/** The list with each plug-in's own types forgotten, for code that treats them all alike. */
export const channelPlugins: readonly ChannelPlugin[] = CHANNEL_PLUGINS;

/** A plug-in's slice of a parsed `channels` section. */
export function sliceOf(channels: object, plugin: ChannelPlugin): ChannelSettings {
  return (channels as Readonly<Record<string, ChannelSettings>>)[plugin.configKey]!;
}

type ChannelPlugins = (typeof CHANNEL_PLUGINS)[number];
type ChannelsShape = { [Plugin in ChannelPlugins as Plugin['configKey']]: Plugin['configSchema'] };

/** The `channels` section of the config: each plug-in's slice under its key; unknown keys refused. */
export function channelsConfigSchema() {
  const shape = Object.fromEntries(CHANNEL_PLUGINS.map((plugin) => [plugin.configKey, plugin.configSchema])) as ChannelsShape;
  return z.strictObject(shape).prefault({});
}

/**
 * `channels` with every configured channel turned off, for the commands that must not run the server's channels
 * (a second poller would take the bot's updates from the running server, a second MTProto client would duplicate
 * the session).
 */
export function channelsOff<Channels extends Readonly<Record<string, ChannelSettings>>>(channels: Channels): Channels {
  return Object.fromEntries(Object.entries(channels).map(([key, settings]) => [key, { ...settings, enabled: false }])) as Channels;
}

/** The same as a config override (`palaver chat`): `{ web: { enabled: false }, … }` for every plug-in. */
export function channelsOffOverride(): Record<string, { enabled: false }> {
  return Object.fromEntries(CHANNEL_PLUGINS.map((plugin) => [plugin.configKey, { enabled: false as const }]));
}
