import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../domain/errors.js';
import { resolveConfigPaths } from './paths.js';
import { configSchema, type PalaverConfig, type PalaverConfigInput } from './schema.js';

/** Environment variables Palaver reads, and where each lands. Nothing else in Palaver reads the environment. */
const ENV_OVERRIDES: readonly { variable: string; path: readonly string[]; parse?: (value: string) => unknown }[] = [
  { variable: 'PALAVER_MODEL', path: ['model', 'name'] },
  { variable: 'PALAVER_PROVIDER', path: ['model', 'provider'] },
  { variable: 'PALAVER_LLM_BASE_URL', path: ['model', 'baseUrl'] },
  { variable: 'PALAVER_LLM_API_KEY', path: ['model', 'apiKey'] },
  { variable: 'PALAVER_FALLBACK_MODEL', path: ['model', 'fallback', 'name'] },
  { variable: 'PALAVER_DB', path: ['database', 'url'] },
  { variable: 'PALAVER_API_KEY', path: ['server', 'apiKey'] },
  { variable: 'PALAVER_HOST', path: ['server', 'host'] },
  { variable: 'PALAVER_PORT', path: ['server', 'port'], parse: Number },
  { variable: 'PALAVER_LOG_LEVEL', path: ['log', 'level'] },
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
}

/**
 * Reads the config file (JSON or YAML), applies `overrides` and then environment variables, and validates the
 * result. Relative paths (instructions, tools module, SQLite file) are made absolute against the config file's
 * folder, or against `cwd` when there is no file.
 * @throws ConfigError naming each invalid field.
 */
export function loadConfig(options: LoadConfigOptions = {}): { config: PalaverConfig; file: string | undefined } {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const file = findConfigFile(options.file ?? env.PALAVER_CONFIG, cwd);
  let raw: Record<string, unknown> = file ? readConfigFile(file) : {};
  if (options.overrides) raw = deepMerge(raw, options.overrides as Record<string, unknown>);
  for (const { variable, path, parse } of ENV_OVERRIDES) {
    const value = env[variable];
    if (value !== undefined && value !== '') raw = setPath(raw, path, parse ? parse(value) : value);
  }
  const config = resolveConfigPaths(parseConfig(raw), file ? dirname(file) : cwd);
  return { config, file };
}

/** Validates an in-memory config (as passed to `createPalaver`). @throws ConfigError */
export function parseConfig(input: unknown): PalaverConfig {
  const result = configSchema.safeParse(input);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => ({
      path: issue.path.join('.') || '(root)',
      message: issue.message,
    }));
    const lines = issues.map((issue) => `  - ${issue.path}: ${issue.message}`).join('\n');
    throw new ConfigError(`Invalid Palaver config:\n${lines}`, issues, { cause: z.prettifyError(result.error) });
  }
  return result.data;
}

function findConfigFile(explicit: string | undefined, cwd: string): string | undefined {
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
    parsed = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new ConfigError(`Cannot parse ${path}: ${(error as Error).message}`, [{ path: '(file)', message: 'unparseable' }], { cause: error });
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(`${path} must hold an object at the top level`, [{ path: '(root)', message: 'expected an object' }]);
  }
  return parsed as Record<string, unknown>;
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
