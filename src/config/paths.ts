import { dirname, resolve } from 'node:path';
import { resolveDatabaseUrl } from './database-url.js';
import type { PalaverConfig } from './schema.js';

/** Name of the file that keeps a generated cookie secret, when `channels.web.cookieSecretFile` is not set. */
export const COOKIE_SECRET_FILE_NAME = 'web-cookie-secret';
/** Name of the Telegram user account's session file, when `channels.telegramUser.sessionFile` is not set. */
export const TELEGRAM_SESSION_FILE_NAME = 'telegram-user.session';

/**
 * Makes the config's relative paths absolute against `baseDir` (the config file's folder, or the working folder
 * when there is no file): the instructions folder, the tools module, a SQLite database file and the web channel's
 * cookie secret file. The cookie secret file defaults to `web-cookie-secret` beside a SQLite file, in
 * `baseDir/data/` for PostgreSQL, and to none (an in-memory secret) for `sqlite::memory:`, whose visitors cannot outlive it anyway.
 * The Telegram user account's session file defaults to `telegram-user.session` in the same folder (`baseDir/data/`
 * for `sqlite::memory:` too: a sign-in outlives any one database).
 */
export function resolveConfigPaths(config: PalaverConfig, baseDir: string): PalaverConfig {
  const databaseUrl = resolveDatabaseUrl(config.database.url, baseDir);
  const { cookieSecretFile, ...web } = config.channels.web;
  const secretFile = cookieSecretFile === undefined ? defaultCookieSecretFile(databaseUrl, baseDir) : resolve(baseDir, cookieSecretFile);
  const telegramUser = config.channels.telegramUser;
  const sessionFile = resolve(baseDir, telegramUser.sessionFile ?? resolve(dataDir(databaseUrl, baseDir) ?? resolve(baseDir, 'data'), TELEGRAM_SESSION_FILE_NAME));
  return {
    ...config,
    agent: {
      ...config.agent,
      instructionsDir: resolve(baseDir, config.agent.instructionsDir),
      ...(config.agent.toolsModule ? { toolsModule: resolve(baseDir, config.agent.toolsModule) } : {}),
    },
    database: { ...config.database, url: databaseUrl },
    channels: {
      ...config.channels,
      web: { ...web, ...(secretFile === undefined ? {} : { cookieSecretFile: secretFile }) },
      telegramUser: { ...telegramUser, sessionFile },
    },
  };
}

function defaultCookieSecretFile(databaseUrl: string, baseDir: string): string | undefined {
  const folder = dataDir(databaseUrl, baseDir);
  return folder === undefined ? undefined : resolve(folder, COOKIE_SECRET_FILE_NAME);
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
