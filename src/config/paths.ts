import { isAbsolute, resolve } from 'node:path';
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

/** `sqlite:` paths relative to `baseDir`; other URLs unchanged. */
export function resolveDatabaseUrl(url: string, baseDir: string): string {
  if (!url.startsWith('sqlite:')) return url;
  const path = url.slice('sqlite:'.length);
  if (path === ':memory:' || path.startsWith('//') || isAbsolute(path)) return url;
  return `sqlite:${resolve(baseDir, path)}`;
}
