// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the ${NAME} references are the config text under test, not templates.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, secretsOf } from '../../src/config/index.js';
import { ConfigError } from '../../src/domain/errors.js';

// Seed 000 keeps its MCP and directory tokens in the environment (MCP_AUTH_TOKEN); the config file names them.

function configFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-env-refs-'));
  writeFileSync(join(dir, name), text);
  return dir;
}

const SEED_YAML = [
  'model:',
  '  name: gpt-4.1-mini',
  '  provider: openai-responses',
  'mcp:',
  '  servers:',
  '    - label: primeai_logistics',
  '      url: ${MCP_SERVER_URL}',
  '      mode: hosted',
  '      headers:',
  '        MCP-Protocol-Version: "2025-06-18"',
  '        Authorization: Bearer ${MCP_AUTH_TOKEN}',
  'identity:',
  '  resolver:',
  '    kind: mcp',
  '    url: ${MCP_LOCAL_URL}',
  '    bearerToken: ${MCP_AUTH_TOKEN}',
  '    headers:',
  '      X-Note: costs $${NOT_EXPANDED}',
  '',
].join('\n');

const SEED_ENV = {
  MCP_SERVER_URL: 'https://mcp.example/mcp',
  MCP_LOCAL_URL: 'http://127.0.0.1:8100/mcp',
  MCP_AUTH_TOKEN: 'mcp-auth-token-from-env-1',
};

describe('${NAME} in the config file', () => {
  it("takes MCP servers' and the directory's URLs and secrets from the environment, and scrubs the secrets from logs", () => {
    const { config } = loadConfig({ cwd: configFile('palaver.config.yaml', SEED_YAML), env: SEED_ENV });

    expect(config.mcp.servers[0]).toMatchObject({
      url: 'https://mcp.example/mcp',
      headers: { 'MCP-Protocol-Version': '2025-06-18', Authorization: 'Bearer mcp-auth-token-from-env-1' },
    });
    expect(config.identity.resolver).toMatchObject({
      kind: 'mcp',
      url: 'http://127.0.0.1:8100/mcp',
      bearerToken: 'mcp-auth-token-from-env-1',
      headers: { 'X-Note': 'costs ${NOT_EXPANDED}' },
    });
    expect(secretsOf(config)).toContain('mcp-auth-token-from-env-1');
  });

  it('refuses an unset or empty variable, naming it and where it is used, instead of an empty string', () => {
    const dir = configFile('palaver.config.yaml', SEED_YAML);
    let error: unknown;
    try {
      loadConfig({ cwd: dir, env: { ...SEED_ENV, MCP_AUTH_TOKEN: undefined, MCP_LOCAL_URL: '' } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toEqual([
      { path: 'mcp.servers.0.headers.Authorization', message: 'environment variable MCP_AUTH_TOKEN is not set (used as ${MCP_AUTH_TOKEN})' },
      { path: 'identity.resolver.url', message: 'environment variable MCP_LOCAL_URL is empty (used as ${MCP_LOCAL_URL})' },
      { path: 'identity.resolver.bearerToken', message: 'environment variable MCP_AUTH_TOKEN is not set (used as ${MCP_AUTH_TOKEN})' },
    ]);
    expect((error as Error).message).toContain(join(dir, 'palaver.config.yaml'));
  });

  it('expands only string values, in JSON files too; a malformed reference is an error, keys and numbers stay as written', () => {
    const json = JSON.stringify({
      model: { name: '${MODEL_NAME}', timeoutMs: 5000, prices: { '${MODEL_NAME}': { input: '0.40', output: '1.60' } } },
      roles: { definitions: { client: { tools: ['${TOOL}'] } } },
    });
    const { config } = loadConfig({ cwd: configFile('palaver.config.json', json), env: { MODEL_NAME: 'm', TOOL: 'cargo_add' } });
    expect(config.model).toMatchObject({ name: 'm', timeoutMs: 5000 });
    expect(Object.keys(config.model.prices)).toEqual(['${MODEL_NAME}']);
    expect(config.roles.definitions).toEqual({ client: { tools: ['cargo_add'] } });

    const broken = configFile('palaver.config.json', JSON.stringify({ model: { name: 'm', apiKey: '${OPENAI KEY}' } }));
    expect(() => loadConfig({ cwd: broken, env: {} })).toThrow(/model\.apiKey: "\$\{OPENAI KEY\}" is not a variable reference/);
  });
});
