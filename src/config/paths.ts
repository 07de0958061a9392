import { dirname, resolve } from 'node:path';
import { resolveDatabaseUrl } from './database-url.js';
import type { PalaverConfig } from './schema.js';

/** Name of the file that keeps a generated cookie secret, when `channels.web.cookieSecretFile` is not set. */
export const COOKIE_SECRET_FILE_NAME = 'web-cookie-secret';

/**
 * Makes the config's relative paths absolute against `baseDir` (the config file's folder, or the working folder
 * when there is no file): the instructions folder, the tools module, a SQLite database file and the web channel's
 * cookie secret file. The cookie secret file defaults to `web-cookie-secret` beside a SQLite file, in
 * `baseDir/data/` for PostgreSQL, and to none (an in-memory secret) for `sqlite::memory:`, whose visitors cannot outlive it anyway.
 */
export function resolveConfigPaths(config: PalaverConfig, baseDir: string): PalaverConfig {
  const databaseUrl = resolveDatabaseUrl(config.database.url, baseDir);
  const { cookieSecretFile, ...web } = config.channels.web;
  const secretFile = cookieSecretFile === undefined ? defaultCookieSecretFile(databaseUrl, baseDir) : resolve(baseDir, cookieSecretFile);
  return {
    ...config,
    agent: {
      ...config.agent,
      instructionsDir: resolve(baseDir, config.agent.instructionsDir),
      ...(config.agent.toolsModule ? { toolsModule: resolve(baseDir, config.agent.toolsModule) } : {}),
    },
    database: { ...config.database, url: databaseUrl },
    channels: { ...config.channels, web: { ...web, ...(secretFile === undefined ? {} : { cookieSecretFile: secretFile }) } },
  };
}

function defaultCookieSecretFile(databaseUrl: string, baseDir: string): string | undefined {
  // PostgreSQL: the folder the default SQLite file would use, `data/` beside the config.
  if (!databaseUrl.startsWith('sqlite:')) return resolve(baseDir, 'data', COOKIE_SECRET_FILE_NAME);
  const path = databaseUrl.slice('sqlite:'.length);
  if (path === ':memory:' || path === '') return undefined;
  return resolve(dirname(path.replace(/^\/\/+/, '/')), COOKIE_SECRET_FILE_NAME);
}
