import { ConfigError } from '../domain/errors.js';

/** `${NAME}`, or `$${NAME}` for the text `${NAME}` itself. */
const REFERENCE = /\$(\$?)\{([^}]*)\}/g;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The config file's values with each `${NAME}` in a string replaced by that environment variable, so secrets (an MCP
 * server's token, the directory's) stay out of the file. Only string values are expanded, never keys; `$${NAME}`
 * writes `${NAME}` literally. A variable that is unset or empty is an error naming it and where it is used, never an
 * empty string: a token that silently became "" would fail later, far from its cause.
 * @throws ConfigError with one issue per reference that cannot be expanded.
 * @example
 * expandEnvReferences({ mcp: { servers: [{ bearerToken: '${MCP_AUTH_TOKEN}' }] } }, process.env);
 */
export function expandEnvReferences(
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
  file = 'the config file',
): Record<string, unknown> {
  const issues: { path: string; message: string }[] = [];
  const expand = (value: unknown, path: readonly (string | number)[]): unknown => {
    if (typeof value === 'string') return expandString(value, path.join('.') || '(root)', env, issues);
    if (Array.isArray(value)) return value.map((item, index) => expand(item, [...path, index]));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expand(item, [...path, key])]));
    }
    return value;
  };
  const expanded = expand(raw, []) as Record<string, unknown>;
  if (issues.length > 0) {
    const lines = issues.map((issue) => `  - ${issue.path}: ${issue.message}`).join('\n');
    throw new ConfigError(`Invalid Palaver config in ${file}:\n${lines}`, issues);
  }
  return expanded;
}

function expandString(text: string, path: string, env: Readonly<Record<string, string | undefined>>, issues: { path: string; message: string }[]): string {
  return text.replace(REFERENCE, (whole, escaped: string, name: string) => {
    if (escaped) return whole.slice(1);
    if (!VARIABLE_NAME.test(name)) {
      issues.push({ path, message: `"${whole}" is not a variable reference: write \${NAME} with letters, digits and _ (or $\${…} for the text itself)` });
      return whole;
    }
    const value = env[name];
    if (value === undefined || value === '') {
      issues.push({ path, message: `environment variable ${name} is ${value === undefined ? 'not set' : 'empty'} (used as \${${name}})` });
      return whole;
    }
    return value;
  });
}
