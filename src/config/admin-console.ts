import { dirname, resolve } from 'node:path';
import { runningServerUrl } from '../platform/server-address-file.js';
import { findConfigFile, loadConfig } from './load-config.js';
import { dataFolder } from './paths.js';

/** Where `palaver admin` sends its requests, and with which token. */
export interface AdminConsoleSettings {
  /** The running Palaver's base URL, without a trailing slash. */
  readonly url: string;
  /** An operator's own token or the admin token, or undefined when none is set anywhere (the server answers 401 or 403). */
  readonly token: string | undefined;
}

export interface AdminConsoleOptions {
  /** `--url`: wins over the config's host and port. */
  readonly url?: string;
  /** `--config`; otherwise `PALAVER_CONFIG`, then palaver.config.{json,yaml,yml} in `cwd`. */
  readonly file?: string;
  readonly cwd?: string;
  /** Defaults to `process.env`; tests pass their own. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

const DEFAULT_HOST = '127.0.0.1';
const DEFAULT_PORT = 3000;

/**
 * The admin console's target: `url` if given; else the address a running `palaver start` recorded in the data
 * folder (whatever `--port` it was started with); else the local Palaver's `server.host` and `server.port` (config
 * file, `PALAVER_HOST`, `PALAVER_PORT`). The token comes from `PALAVER_OPERATOR_TOKEN` (an operator's own), else
 * `PALAVER_ADMIN_TOKEN`, else the config's `server.adminToken`. Without a config file nothing else is required: the console runs on an operator's machine
 * that has no model settings, only a URL and a token.
 * @throws ConfigError when a config file is named but missing, or the one found is invalid.
 */
export function adminConsoleSettings(options: AdminConsoleOptions = {}): AdminConsoleSettings {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const envToken = nonEmpty(env.PALAVER_OPERATOR_TOKEN) ?? nonEmpty(env.PALAVER_ADMIN_TOKEN);
  if (options.url !== undefined && envToken !== undefined) return { url: trimSlash(options.url), token: envToken };

  const file = findConfigFile(options.file ?? nonEmpty(env.PALAVER_CONFIG), cwd);
  if (file === undefined) {
    const port = nonEmpty(env.PALAVER_PORT);
    const configured = localUrl(nonEmpty(env.PALAVER_HOST) ?? DEFAULT_HOST, port === undefined ? DEFAULT_PORT : Number(port));
    // Without a config, `palaver start` keeps its data in ./data.
    return { url: trimSlash(options.url ?? runningServerUrl(resolve(cwd, 'data')) ?? configured), token: envToken };
  }
  // The model settings play no part here: a config that names only the server is enough.
  const { config } = loadConfig({ file, cwd, env, defaults: { model: { name: 'unused-by-the-admin-console' } } });
  const { server } = config;
  const running = runningServerUrl(dataFolder(config, dirname(file)));
  const operatorToken = nonEmpty(env.PALAVER_OPERATOR_TOKEN);
  return { url: trimSlash(options.url ?? running ?? localUrl(server.host, server.port)), token: operatorToken ?? server.adminToken };
}

/** The URL a client on this machine reaches a server on: a wildcard address means loopback. */
function localUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' || host === '[::]' ? '::1' : host;
  const bracketed = reachable.includes(':') && !reachable.startsWith('[') ? `[${reachable}]` : reachable;
  return `http://${bracketed}:${port}`;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
