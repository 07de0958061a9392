import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { nearestKey } from '../../src/config/unknown-keys.js';
import { ConfigError } from '../../src/domain/errors.js';

function configError(input: unknown): ConfigError {
  try {
    parseConfig(input);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('parseConfig accepted the config');
}

const model = { name: 'm' };

describe('unknown config keys', () => {
  it('refuses a misspelt top-level key and names the nearest known one', () => {
    const error = configError({ modle: { name: 'm' }, model });
    expect(error.message).toContain('Unknown key "modle" in the config; did you mean "model"?');
    expect(error.issues).toContainEqual({ path: 'modle', message: 'Unknown key "modle" in the config; did you mean "model"?' });
  });

  it('refuses a misspelt nested key, saying where it is', () => {
    expect(configError({ model, agent: { historyLimt: 5 } }).message).toContain('Unknown key "historyLimt" in agent; did you mean "historyLimit"?');
    expect(configError({ model: { name: 'm', fallback: { nmae: 'x', name: 'y' } } }).message).toContain(
      'Unknown key "nmae" in model.fallback; did you mean "name"?',
    );
    expect(configError({ model, server: { prot: 80 } }).message).toContain('Unknown key "prot" in server; did you mean "port"?');
    expect(configError({ model, channels: { web: { enable: false } } }).message).toContain('Unknown key "enable" in channels.web; did you mean "enabled"?');
  });

  it('looks inside arrays and record values', () => {
    const server = { label: 'docs', url: 'http://127.0.0.1:9/mcp' };
    expect(configError({ model, mcp: { servers: [server, { ...server, bearer: 'x' }] } }).message).toContain('Unknown key "bearer" in mcp.servers.1');
    expect(configError({ model: { name: 'm', prices: { m: { input: '1', output: '1', cached: '0.5' } } } }).message).toContain(
      'Unknown key "cached" in model.prices.m; known keys: input, output, cachedInput',
    );
    expect(configError({ model, roles: { definitions: { client: { tool: ['a'] } } } }).message).toContain(
      'Unknown key "tool" in roles.definitions.client; did you mean "tools"?',
    );
  });

  it('lists the known keys when nothing is close', () => {
    expect(configError({ model, log: { colour: true } }).message).toContain('Unknown key "colour" in log; known keys: level');
  });

  it('reports every unknown key next to the other problems', () => {
    const error = configError({ model, agent: { historyLimt: 5, maxToolRound: 2 }, server: { port: 99_999 } });
    expect(error.issues.map((issue) => issue.path)).toEqual(expect.arrayContaining(['agent.historyLimt', 'agent.maxToolRound', 'server.port']));
  });

  it('keeps records free: any model name in prices, any role name in definitions', () => {
    const config = parseConfig({
      model: { name: 'm', prices: { 'gpt-4.1-mini': { input: '0.40', output: '1.60' }, 'my/local-model': { input: '0', output: '0' } } },
      roles: { definitions: { client: { tools: ['a'] }, transporter: {} } },
    });
    expect(Object.keys(config.model.prices)).toEqual(['gpt-4.1-mini', 'my/local-model']);
    expect(Object.keys(config.roles.definitions)).toEqual(['client', 'transporter']);
  });
});

describe('nearestKey', () => {
  it('finds slips of one or two letters, swaps, case and snake_case', () => {
    expect(nearestKey('historyLimt', ['historyLimit', 'name'])).toBe('historyLimit');
    expect(nearestKey('histroyLimit', ['historyLimit'])).toBe('historyLimit');
    expect(nearestKey('history_limit', ['historyLimit'])).toBe('historyLimit');
    expect(nearestKey('BaseURL', ['baseUrl', 'name'])).toBe('baseUrl');
    expect(nearestKey('maxToolRound', ['maxToolRounds', 'maxCallsPerTool'])).toBe('maxToolRounds');
  });

  it('suggests nothing for a short key that is only vaguely alike', () => {
    expect(nearestKey('foo', ['log', 'model'])).toBeUndefined();
    expect(nearestKey('colour', ['level'])).toBeUndefined();
  });
});
