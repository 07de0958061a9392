import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from '../../src/config/index.js';
import { ConfigError } from '../../src/domain/errors.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'palaver-config-'));
}

describe('config', () => {
  it('fills embedded defaults: SQLite under ./data, loopback server, chat completions', () => {
    const config = parseConfig({ model: { name: 'gpt-4.1-mini' } });
    expect(config.database.url).toBe('sqlite:./data/palaver.db');
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 3000 });
    expect(config.model).toMatchObject({ provider: 'openai-chat', maxRetries: 2, currency: 'USD' });
    expect(config.agent.historyLimit).toBe(20);
  });

  it('reads a YAML file and lets environment variables override it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.yaml'), 'model:\n  name: from-file\n  baseUrl: http://127.0.0.1:1/v1\nserver:\n  port: 4000\n');
    const { config, file } = loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'from-env', PALAVER_PORT: '4100', PALAVER_DB: 'postgres://db.internal/palaver' } });
    expect(file).toBe(join(dir, 'palaver.config.yaml'));
    expect(config.model.name).toBe('from-env');
    expect(config.model.baseUrl).toBe('http://127.0.0.1:1/v1');
    expect(config.server.port).toBe(4100);
    expect(config.database.url).toBe('postgres://db.internal/palaver');
  });

  it('reads a JSON file named by PALAVER_CONFIG', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'custom.json'), JSON.stringify({ model: { name: 'json-model', provider: 'openai-responses' } }));
    const { config } = loadConfig({ cwd: dir, env: { PALAVER_CONFIG: 'custom.json' } });
    expect(config.model).toMatchObject({ name: 'json-model', provider: 'openai-responses' });
  });

  it('names the field and the problem when the config is invalid', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.json'), JSON.stringify({ model: { name: 'x', baseUrl: 'not a url', provider: 'telepathy' }, server: { port: 99999 } }));
    let error: unknown;
    try {
      loadConfig({ cwd: dir, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const paths = (error as ConfigError).issues.map((issue) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(['model.baseUrl', 'model.provider', 'server.port']));
    expect((error as ConfigError).message).toContain('model.provider');
  });

  it('requires a model name and says so', () => {
    expect(() => loadConfig({ cwd: tempDir(), env: {} })).toThrow(/model/);
  });

  it('rejects a database URL of an unknown kind', () => {
    expect(() => parseConfig({ model: { name: 'm' }, database: { url: 'mongodb://x' } })).toThrow(/database\.url/);
  });

  it('reports an unparseable file instead of ignoring it', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.json'), '{ "model": ');
    expect(() => loadConfig({ cwd: dir, env: {} })).toThrow(/Cannot parse/);
  });

  it('keeps prices as exact decimal strings', () => {
    const config = parseConfig({ model: { name: 'm', prices: { m: { input: '0.40', output: '1.60' } } } });
    expect(config.model.prices.m).toEqual({ input: '0.40', output: '1.60' });
    expect(() => parseConfig({ model: { name: 'm', prices: { m: { input: 0.4, output: '1' } } } })).toThrow(/model\.prices\.m\.input/);
  });

  it('refuses MCP settings Palaver cannot honour, saying why', () => {
    const hosted = { label: 'docs', url: 'http://127.0.0.1:9/mcp', mode: 'hosted' };
    const model = { name: 'm', provider: 'openai-responses' };
    expect(() => parseConfig({ model, mcp: { servers: [{ ...hosted, requireApproval: 'always' }] } })).toThrow(/requireApproval: only "never" is supported/);
    expect(() => parseConfig({ model, mcp: { servers: [{ ...hosted, userIdArgument: 'user_id' }] } })).toThrow(/userIdArgument: hosted mode cannot bind the user/);
  });
});
