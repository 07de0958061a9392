import { dirname, resolve } from 'node:path';
import { channelPlugins, sliceOf } from '../channels/registry.js';
import { resolveDatabaseUrl } from './database-url.js';
import type { PalaverConfig } from './schema.js';

/**
 * Makes the config's relative paths absolute against `baseDir` (the config file's folder, or the working folder
 * when there is no file): the instructions folder, the tools module, a SQLite database file, and each channel's
 * own files (its plug-in's `resolvePaths`: the web channel's cookie secret, the Telegram account's session).
 */
export function resolveConfigPaths(config: PalaverConfig, baseDir: string): PalaverConfig {
  const databaseUrl = resolveDatabaseUrl(config.database.url, baseDir);
  const where = { baseDir, dataDir: dataDir(databaseUrl, baseDir) };
  const channels: Record<string, unknown> = { ...config.channels };
  for (const plugin of channelPlugins) {
    if (plugin.resolvePaths) channels[plugin.configKey] = plugin.resolvePaths(sliceOf(config.channels, plugin), where);
  }
  return {
    ...config,
    agent: {
      ...config.agent,
      instructionsDir: resolve(baseDir, config.agent.instructionsDir),
      ...(config.agent.toolsModule ? { toolsModule: resolve(baseDir, config.agent.toolsModule) } : {}),
    },
    ...(config.model.script ? { model: { ...config.model, script: resolve(baseDir, config.model.script) } } : {}),
    database: { ...config.database, url: databaseUrl },
    channels: channels as PalaverConfig['channels'],
  };
}

/**
 * Where Palaver keeps its own files for a resolved config: the SQLite file's folder, else `data/` in `baseDir` (for
 * PostgreSQL and an in-memory database).
 */
export function dataFolder(config: PalaverConfig, baseDir: string): string {
  return dataDir(config.database.url, baseDir) ?? resolve(baseDir, 'data');
}

/** Palaver's data folder: the SQLite file's, or `data/` beside the config for PostgreSQL; none for an in-memory database. */
function dataDir(databaseUrl: string, baseDir: string): string | undefined {
  // PostgreSQL: the folder the default SQLite file would use, `data/` beside the config.
  if (!databaseUrl.startsWith('sqlite:')) return resolve(baseDir, 'data');
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:' || path === '') return undefined;
  return dirname(path.replace(/^\/\/+/, '/'));
}
