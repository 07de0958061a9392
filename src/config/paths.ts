import { resolve } from 'node:path';
import { resolveDatabaseUrl } from './database-url.js';
import type { PalaverConfig } from './schema.js';

/**
 * Makes the config's relative paths absolute against `baseDir` (the config file's folder, or the working folder
 * when there is no file): the instructions folder, the tools module and a SQLite database file.
 */
export function resolveConfigPaths(config: PalaverConfig, baseDir: string): PalaverConfig {
  return {
    ...config,
    agent: {
      ...config.agent,
      instructionsDir: resolve(baseDir, config.agent.instructionsDir),
      ...(config.agent.toolsModule ? { toolsModule: resolve(baseDir, config.agent.toolsModule) } : {}),
    },
    database: { ...config.database, url: resolveDatabaseUrl(config.database.url, baseDir) },
  };
}
