import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../domain/errors.js';
import { expandEnvReferences } from './env-references.js';
import { resolveConfigPaths } from './paths.js';
import { configSchema, type PalaverConfig, type PalaverConfigInput } from './schema.js';
import { describeUnknownKey, knownKeysAt } from './unknown-keys.js';

/** Environment variables Palaver reads, and where each lands. Nothing else in Palaver reads the environment. */
const ENV_OVERRIDES: readonly { variable: string; path: readonly string[]; parse?: (value: string) => unknown }[] = [
  { variable: 'PALAVER_MODEL', path: ['model', 'name'] },
  { variable: 'PALAVER_PROVIDER', path: ['model', 'provider'] },
  { variable: 'PALAVER_LLM_BASE_URL', path: ['model', 'baseUrl'] },
  { variable: 'PALAVER_LLM_API_KEY', path: ['model', 'apiKey'] },
  { variable: 'PALAVER_FALLBACK_MODEL', path: ['model', 'fallback', 'name'] },
  { variable: 'PALAVER_DB', path: ['database', 'url'] },
  { variable: 'PALAVER_REDIS_URL', path: ['redis', 'url'] },
  { variable: 'PALAVER_TOOL_RESULT_SECRET', path: ['tools', 'resultSecret'] },
  { variable: 'PALAVER_OPERATORS_WEBHOOK_SECRET', path: ['operators', 'notify', 'webhookSecret'] },
  { variable: 'PALAVER_CLUSTER_BUS', path: ['cluster', 'bus'] },
  { variable: 'PALAVER_API_KEY', path: ['server', 'apiKey'] },
  { variable: 'PALAVER_ADMIN_TOKEN', path: ['server', 'adminToken'] },
  { variable: 'PALAVER_HOST', path: ['server', 'host'] },
  { variable: 'PALAVER_PORT', path: ['server', 'port'], parse: Number },
  { variable: 'PALAVER_LOG_LEVEL', path: ['log', 'level'] },
  { variable: 'PALAVER_BILLING_DEFAULT_COUNTRY', path: ['billing', 'defaultCountry'] },
  // The name a team that priced in CNY already sets (BILLING_USD_CNY_RATE=7.2); Palaver's own name, after it, wins.
  { variable: 'BILLING_USD_CNY_RATE', path: ['billing', 'usdRates', 'CNY'] },
  { variable: 'PALAVER_BILLING_USD_CNY_RATE', path: ['billing', 'usdRates', 'CNY'] },
  { variable: 'PALAVER_LOG_FORMAT', path: ['log', 'format'] },
  { variable: 'PALAVER_COOKIE_SECRET', path: ['channels', 'web', 'cookieSecret'] },
  { variable: 'PALAVER_USER_TOKEN_SECRET', path: ['channels', 'web', 'userTokens', 'secret'] },
  { variable: 'TELEGRAM_BOT_TOKEN', path: ['channels', 'telegram', 'token'] },
  { variable: 'TELEGRAM_API_ROOT', path: ['channels', 'telegram', 'apiRoot'] },
  { variable: 'TELEGRAM_WEBHOOK_URL', path: ['channels', 'telegram', 'webhookUrl'] },
  { variable: 'TELEGRAM_WEBHOOK_SECRET', path: ['channels', 'telegram', 'webhookSecret'] },
  { variable: 'TELEGRAM_API_ID', path: ['channels', 'telegramUser', 'apiId'], parse: Number },
  { variable: 'TELEGRAM_API_HASH', path: ['channels', 'telegramUser', 'apiHash'] },
];

const CONFIG_FILES = ['palaver.config.json', 'palaver.config.yaml', 'palaver.config.yml'];

export interface LoadConfigOptions {
  /** Explicit config file; otherwise `PALAVER_CONFIG`, then the first of palaver.config.{json,yaml,yml} in `cwd`. */
  readonly file?: string;
  readonly cwd?: string;
  /** Defaults to `process.env`; tests pass their own. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Applied after the file and before the environment (used by `--demo`). */
  readonly overrides?: PalaverConfigInput | Record<string, unknown>;
  /** Applied under the file: what the file sets wins (`--demo`'s agent name yields to the configured one). */
  readonly defaults?: PalaverConfigInput | Record<string, unknown>;
}

/**
 * Reads the config file (JSON or YAML), expands `${NAME}` in its string values from the environment
 * (`expandEnvReferences`), applies `overrides` and then environment variables, and validates the
 * result. Relative paths (instructions, tools module, SQLite file) are made absolute against the config file's
 * folder, or against `cwd` when there is no file. The YAML parser is loaded only for a YAML file.
 * @throws ConfigError naming each invalid field; with no config file and no model name (nor `PALAVER_MODEL`), a
 * message that shows how to create a config or to use `--demo`.
 * @example
 * const { config, file } = loadConfig({ cwd: '/srv/agent' });
 */
export function loadConfig(options: LoadConfigOptions = {}): { config: PalaverConfig; file: string | undefined } {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const file = findConfigFile(options.file ?? env.PALAVER_CONFIG, cwd);
  // `${NAME}` in the file's strings comes from the environment (secrets kept out of the file); overrides are not expanded.
  let raw: Record<string, unknown> = file ? expandEnvReferences(readConfigFile(file), env, file) : {};
  if (options.defaults) raw = deepMerge(options.defaults as Record<string, unknown>, raw);
  if (options.overrides) raw = deepMerge(raw, options.overrides as Record<string, unknown>);
  for (const { variable, path, parse } of ENV_OVERRIDES) {
    const value = env[variable];
    if (value !== undefined && value !== '') raw = setPath(raw, path, parse ? parse(value) : value);
  }
  if (!file && !(isPlainObject(raw.model) && raw.model.name !== undefined)) throw noConfigError(cwd);
  const config = resolveConfigPaths(parseConfig(raw), file ? dirname(file) : cwd);
  return { config, file };
}

/**
 * Validates an in-memory config (as passed to `createPalaver`). Unknown keys are refused at every level, naming
 * the nearest known key; records (`model.prices`, `roles.definitions`) keep free keys.
 * @throws ConfigError with one issue per problem.
 */
export function parseConfig(input: unknown): PalaverConfig {
  const result = configSchema.safeParse(input);
  if (!result.success) {
    const issues: { path: string; message: string; line: string }[] = [];
    for (const issue of result.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        const known = knownKeysAt(configSchema, issue.path);
        for (const key of issue.keys) {
          const message = describeUnknownKey(key, issue.path, known);
          // The message already names where the key is.
          issues.push({ path: [...issue.path, key].join('.'), message, line: message });
        }
        continue;
      }
      const path = issue.path.join('.') || '(root)';
      const message = path === 'model' && isPlainObject(input) && input.model === undefined ? MODEL_MISSING : issue.message;
      issues.push({ path, message, line: `${path}: ${message}` });
    }
    const lines = issues.map((issue) => `  - ${issue.line}`).join('\n');
    throw new ConfigError(
      `Invalid Palaver config:\n${lines}`,
      issues.map(({ path, message }) => ({ path, message })),
      { cause: z.prettifyError(result.error) },
    );
  }
  return result.data;
}

const MODEL_MISSING = 'missing: set model.name (and model.baseUrl for an endpoint other than OpenAI), or PALAVER_MODEL';

/** Without a file and a model there is nothing to run: say how to make a config instead of naming a missing field. */
function noConfigError(cwd: string): ConfigError {
  const message = [
    `No Palaver config found in ${cwd} (palaver.config.json, palaver.config.yaml, --config FILE or PALAVER_CONFIG), and no model is set.`,
    'Create palaver.config.json there, for example:',
    '  {',
    '    "model": { "name": "gpt-4.1-mini", "baseUrl": "https://api.openai.com/v1" }',
    '  }',
    'and put the API key in PALAVER_LLM_API_KEY. Or name the model in the environment:',
    '  PALAVER_MODEL=gpt-4.1-mini PALAVER_LLM_BASE_URL=https://api.openai.com/v1 PALAVER_LLM_API_KEY=sk-...',
    'Or add --demo to try the bundled demo agent with a scripted model (no API key needed).',
  ].join('\n');
  return new ConfigError(message, [{ path: 'model', message: 'no config file and no model set' }]);
}

/**
 * The config file to read: `explicit` (resolved against `cwd`), else the first of palaver.config.{json,yaml,yml} in
 * `cwd`; undefined when there is none.
 * @throws ConfigError when `explicit` names a file that does not exist.
 */
export function findConfigFile(explicit: string | undefined, cwd: string): string | undefined {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (!existsSync(path)) throw new ConfigError(`Config file not found: ${path}`, [{ path: '(file)', message: 'not found' }]);
    return path;
  }
  return CONFIG_FILES.map((name) => resolve(cwd, name)).find((path) => existsSync(path));
}

function readConfigFile(path: string): Record<string, unknown> {
  const text = readFileSync(path, 'utf8');
  let parsed: unknown;
  try {
    parsed = path.endsWith('.json') ? JSON.parse(text) : loadYamlParser()(text);
  } catch (error) {
    throw new ConfigError(`Cannot parse ${path}: ${(error as Error).message}`, [{ path: '(file)', message: 'unparseable' }], { cause: error });
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`${path} must hold an object at the top level`, [{ path: '(root)', message: 'expected an object' }]);
  }
  return parsed as Record<string, unknown>;
}

/**
 * The YAML parser, loaded on first use so a JSON config never loads it. `require` keeps `loadConfig` synchronous
 * (a dynamic `import()` would make it async for every caller); the `yaml` package ships a CommonJS build for Node.
 */
function loadYamlParser(): (text: string) => unknown {
  const yaml = createRequire(import.meta.url)('yaml') as { parse: (text: string) => unknown };
  return (text) => yaml.parse(text);
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  if (head === undefined) return target;
  const child = target[head];
  return {
    ...target,
    [head]: rest.length === 0 ? value : setPath(isPlainObject(child) ? child : {}, rest, value),
  };
}

function deepMerge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
