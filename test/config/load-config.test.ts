import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, secretsOf } from '../../src/config/index.js';
import { ConfigError } from '../../src/domain/errors.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'palaver-config-'));
}

describe('config', () => {
  it('fills embedded defaults: SQLite under ./data, loopback server, chat completions', () => {
    const config = parseConfig({ model: { name: 'gpt-4.1-mini' } });
    expect(config.database.url).toBe('sqlite:./data/palaver.db');
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 3000 });
    expect(config.model).toMatchObject({ provider: 'openai-chat', maxRetries: 2 });
    expect(config.billing).toEqual({ currencyByCountry: { CN: 'CNY' }, defaultCurrency: 'USD', usdRates: { CNY: '7.10' }, priceTable: true });
    expect(config.budgets).toEqual({});
    expect(config.agent.historyLimit).toBe(20);
    expect(config.agent.historyTokenLimit).toBe(8000);
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
    writeFileSync(
      join(dir, 'palaver.config.json'),
      JSON.stringify({ model: { name: 'x', baseUrl: 'not a url', provider: 'telepathy' }, server: { port: 99999 } }),
    );
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

  it('without a config file or a model, says how to create one or to use --demo', () => {
    const dir = tempDir();
    let error: unknown;
    try {
      loadConfig({ cwd: dir, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain(`No Palaver config found in ${dir}`);
    expect(message).toContain('palaver.config.json');
    expect(message).toContain('"model": { "name": "gpt-4.1-mini", "baseUrl": "https://api.openai.com/v1" }');
    expect(message).toMatch(/PALAVER_MODEL=.*PALAVER_LLM_BASE_URL=.*PALAVER_LLM_API_KEY=/);
    expect(message).toContain('--demo');
    expect(message).not.toContain('expected object');
    // The environment alone is enough.
    expect(loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'from-env' } }).config.model.name).toBe('from-env');
  });

  it('names the missing model plainly when a config file has none', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.json'), JSON.stringify({ server: { port: 4000 } }));
    expect(() => loadConfig({ cwd: dir, env: {} })).toThrow(/model: missing: set model\.name .*PALAVER_MODEL/);
  });

  it('turns summaries on only when configured, and refuses keeping more recent messages than the history holds', () => {
    expect(parseConfig({ model: { name: 'm' } }).agent.memory.summarize).toBeUndefined();
    expect(
      parseConfig({ model: { name: 'm' }, agent: { memory: { summarize: { afterTokens: 4000, keepRecentMessages: 10 } } } }).agent.memory.summarize,
    ).toEqual({
      afterTokens: 4000,
      keepRecentMessages: 10,
    });
    expect(() =>
      parseConfig({ model: { name: 'm' }, agent: { historyLimit: 20, memory: { summarize: { afterTokens: 4000, keepRecentMessages: 30 } } } }),
    ).toThrow(/agent\.memory\.summarize\.keepRecentMessages: must not exceed agent\.historyLimit \(20\)/);
    expect(() => parseConfig({ model: { name: 'm' }, agent: { memory: { summarize: { keepRecentMessages: 10 } } } })).toThrow(
      /agent\.memory\.summarize\.afterTokens/,
    );
  });

  it("checks the operators' settings: a webhook needs its secret (also from the environment), hours are ranges", () => {
    const model = { name: 'm' };
    expect(() => parseConfig({ model, operators: { notify: { webhookUrl: 'https://ops.example.com/hook' } } })).toThrow(
      /operators\.notify\.webhookSecret: set webhookSecret \(or PALAVER_OPERATORS_WEBHOOK_SECRET\) with webhookUrl/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'palaver-operators-'));
    writeFileSync(join(dir, 'palaver.config.json'), JSON.stringify({ model, operators: { notify: { webhookUrl: 'https://ops.example.com/hook' } } }));
    const secret = 'a-webhook-secret-of-24-chars-or-more';
    expect(loadConfig({ cwd: dir, env: { PALAVER_OPERATORS_WEBHOOK_SECRET: secret } }).config.operators.notify.webhookSecret).toBe(secret);
    expect(() => parseConfig({ model, operators: { hours: { days: { mon: '18:00-09:00' } } } })).toThrow(
      /operators\.hours\.days\.mon: the range must end after it starts/,
    );
    expect(() => parseConfig({ model, operators: { hours: { days: { fri: '9-17' } } } })).toThrow(/a range of hours, e\.g\. "09:00-18:00"/);
    expect(parseConfig({ model, operators: { hours: { timeZone: 'Europe/Kyiv', days: { mon: '09:00-18:00' } } } }).operators.hours).toEqual({
      timeZone: 'Europe/Kyiv',
      days: { mon: '09:00-18:00' },
    });
  });

  it('rejects a database URL of an unknown kind, naming only its scheme', () => {
    expect(() => parseConfig({ model: { name: 'm' }, database: { url: 'mongodb://x' } })).toThrow(/database\.url: "mongodb:" databases are not supported/);
    let message = '';
    try {
      parseConfig({ model: { name: 'm' }, database: { url: 'mssql://app:s3cret@db.internal/palaver' } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('"mssql:" databases are not supported; use sqlite:<path>, a plain file path');
    expect(message).not.toContain('s3cret');
    expect(() => parseConfig({ model: { name: 'm' }, database: { url: '' } })).toThrow(/database\.url: empty/);
  });

  it('reads a plain file path in PALAVER_DB or database.url as SQLite, relative to the config folder', () => {
    const dir = tempDir();
    const load = (env: Record<string, string>) => loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'm', ...env } }).config.database.url;
    expect(load({ PALAVER_DB: './data/palaver.db' })).toBe(`sqlite:${join(dir, 'data', 'palaver.db')}`);
    expect(load({ PALAVER_DB: 'palaver.sqlite' })).toBe(`sqlite:${join(dir, 'palaver.sqlite')}`);
    expect(load({ PALAVER_DB: '/var/lib/palaver.db' })).toBe('sqlite:/var/lib/palaver.db');
    expect(load({ PALAVER_DB: 'sqlite::memory:' })).toBe('sqlite::memory:');
    expect(load({ PALAVER_DB: 'sqlite:./x.db' })).toBe(`sqlite:${join(dir, 'x.db')}`);
    expect(load({ PALAVER_DB: 'postgresql://db.internal/palaver' })).toBe('postgresql://db.internal/palaver');
    expect(load({ PALAVER_DB: 'mysql://db.internal/palaver' })).toBe('mysql://db.internal/palaver');
    expect(load({ PALAVER_DB: 'mariadb://db.internal/palaver' })).toBe('mariadb://db.internal/palaver');
    expect(() => load({ PALAVER_DB: 'mssql://db.internal/palaver' })).toThrow(/"mssql:" databases are not supported/);

    expect(parseConfig({ model: { name: 'm' }, database: { url: 'data/agent.db' } }).database.url).toBe('sqlite:data/agent.db');
    const viaFile = tempDir();
    writeFileSync(join(viaFile, 'palaver.config.json'), JSON.stringify({ model: { name: 'm' }, database: { url: 'db/agent.db' } }));
    expect(loadConfig({ cwd: dir, env: { PALAVER_CONFIG: join(viaFile, 'palaver.config.json') } }).config.database.url).toBe(
      `sqlite:${join(viaFile, 'db', 'agent.db')}`,
    );
  });

  it('has a channels section with the web channel on by default and Telegram only with a token', () => {
    const { channels } = parseConfig({ model: { name: 'm' } });
    expect(channels.web).toMatchObject({ enabled: true });
    expect(channels.telegram).toMatchObject({ enabled: true, quietWindowMs: 2500 });
    expect(channels.telegram.token).toBeUndefined();
    expect(parseConfig({ model: { name: 'm' }, channels: { web: { enabled: false } } }).channels.web.enabled).toBe(false);
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { enabled: 'no' } } })).toThrow(/channels\.web\.enabled/);
    expect(() => parseConfig({ model: { name: 'm' }, channels: { telegrm: {} } })).toThrow(/Unknown key "telegrm" in channels; did you mean "telegram"\?/);
  });

  it("takes the chat page's accent colour only as a CSS hex colour and its logo only as http(s) or a path", () => {
    const web = (settings: object) => parseConfig({ model: { name: 'm' }, channels: { web: settings } }).channels.web;
    expect(web({ accentColor: '#C2185B', logoUrl: 'https://cdn.example/logo.svg' })).toMatchObject({
      accentColor: '#C2185B',
      logoUrl: 'https://cdn.example/logo.svg',
    });
    expect(web({ logoUrl: '/logo.png' }).logoUrl).toBe('/logo.png');
    expect(() => web({ accentColor: 'red;background:url(x)' })).toThrow(/channels\.web\.accentColor: .*CSS hex colour/);
    expect(() => web({ logoUrl: 'javascript:alert(1)' })).toThrow(/channels\.web\.logoUrl/);
    expect(() => web({ logoUrl: '//evil.example/x.png' })).toThrow(/channels\.web\.logoUrl/);
  });

  it('reads the USD to CNY rate and the default billing country from the environment, the seed 003 name included', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.json'), JSON.stringify({ model: { name: 'm' }, billing: { usdRates: { EUR: '0.92' } } }));
    const billing = (env: Record<string, string>) => loadConfig({ cwd: dir, env }).config.billing;
    expect(billing({})).toMatchObject({ usdRates: { CNY: '7.10', EUR: '0.92' } });
    expect(billing({ BILLING_USD_CNY_RATE: '7.2', PALAVER_BILLING_DEFAULT_COUNTRY: 'CN' })).toMatchObject({
      defaultCountry: 'CN',
      usdRates: { CNY: '7.2', EUR: '0.92' },
    });
    // Palaver's own name wins over the seed's when both are set.
    expect(billing({ BILLING_USD_CNY_RATE: '7.2', PALAVER_BILLING_USD_CNY_RATE: '7.25' }).usdRates['CNY']).toBe('7.25');
    expect(() => billing({ BILLING_USD_CNY_RATE: 'seven' })).toThrow(/billing\.usdRates\.CNY: a decimal number as a string/);
    expect(() => billing({ PALAVER_BILLING_DEFAULT_COUNTRY: 'CHN' })).toThrow(/billing\.defaultCountry/);
  });

  it('reads the admin token from PALAVER_ADMIN_TOKEN and refuses one equal to the chat API key', () => {
    const dir = tempDir();
    const token = 'admin-token-0123456789';
    expect(loadConfig({ cwd: dir, env: { PALAVER_MODEL: 'm', PALAVER_ADMIN_TOKEN: token } }).config.server.adminToken).toBe(token);
    expect(parseConfig({ model: { name: 'm' } }).server.adminToken).toBeUndefined();
    expect(() => parseConfig({ model: { name: 'm' }, server: { apiKey: token, adminToken: token } })).toThrow(
      /server\.adminToken: must differ from server\.apiKey/,
    );
    expect(() => parseConfig({ model: { name: 'm' }, server: { adminToken: 'short' } })).toThrow(/at least 16 characters/);
  });

  it('takes trusted proxies only as IP addresses or CIDR ranges', () => {
    const proxies = (trustedProxies: string[]) => parseConfig({ model: { name: 'm' }, server: { trustedProxies } }).server.trustedProxies;
    expect(parseConfig({ model: { name: 'm' } }).server.trustedProxies).toEqual([]);
    expect(proxies(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1'])).toEqual(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1']);
    expect(() => proxies(['proxy.internal'])).toThrow(/server\.trustedProxies\.0: an IP address or a CIDR range/);
    expect(() => proxies(['10.0.0.0/33'])).toThrow(/server\.trustedProxies\.0/);
  });

  it('runs the single flow unless told otherwise, and refuses flows it does not have', () => {
    expect(parseConfig({ model: { name: 'm' } }).agent.flow).toBe('single');
    expect(parseConfig({ model: { name: 'm' }, agent: { flow: 'single' } }).agent.flow).toBe('single');
    expect(parseConfig({ model: { name: 'm' }, agent: { flow: 'staged', type: 'booking' } }).agent).toMatchObject({ flow: 'staged', type: 'booking' });
    expect(() => parseConfig({ model: { name: 'm' }, agent: { flow: 'pipeline' } })).toThrow(/agent\.flow: Invalid option: expected one of "single"\|"staged"/);
  });

  it('loads the YAML parser for a YAML config only', () => {
    // A child process: this test process may have loaded `yaml` already. Node's CommonJS cache lists `yaml` however
    // it was loaded (a static `import` of it goes through that cache too, as its Node build is CommonJS).
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const configModule = pathToFileURL(join(import.meta.dirname, '../../src/config/index.ts')).href;
    const probe = [
      `import { createRequire } from 'node:module';`,
      `const { loadConfig } = await import(${JSON.stringify(configModule)});`,
      `const { config } = loadConfig({ cwd: process.cwd(), env: {} });`,
      `const loaded = Object.keys(createRequire(import.meta.url).cache).some((path) => /[\\/]node_modules[\\/]yaml[\\/]/.test(path));`,
      `console.log(JSON.stringify({ model: config.model.name, yaml: loaded }));`,
    ].join('\n');
    const run = (file: string, text: string) => {
      const dir = tempDir();
      writeFileSync(join(dir, file), text);
      const child = spawnSync(process.execPath, ['--import', tsx, '--input-type=module', '-e', probe], { cwd: dir, encoding: 'utf8' });
      expect(child.stderr).toBe('');
      return JSON.parse(child.stdout) as { model: string; yaml: boolean };
    };
    expect(run('palaver.config.json', JSON.stringify({ model: { name: 'json-model' } }))).toEqual({ model: 'json-model', yaml: false });
    expect(run('palaver.config.yaml', 'model:\n  name: yaml-model\n')).toEqual({ model: 'yaml-model', yaml: true });
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

  it('takes a cached input price, and refuses a currency Palaver would bill or budget in without a USD rate', () => {
    const config = parseConfig({
      model: { name: 'm', prices: { m: { input: '0.40', cachedInput: '0.10', output: '1.60' } } },
      budgets: { perUserPerDay: '2.5', currency: 'USD' },
    });
    expect(config.model.prices.m).toEqual({ input: '0.40', cachedInput: '0.10', output: '1.60' });
    expect(config.budgets).toEqual({ perUserPerDay: '2.5', currency: 'USD' });
    expect(() => parseConfig({ model: { name: 'm' }, billing: { currencyByCountry: { DE: 'EUR' } } })).toThrow(
      /billing\.currencyByCountry\.DE.*no USD rate for EUR/s,
    );
    expect(() => parseConfig({ model: { name: 'm' }, billing: { defaultCurrency: 'EUR' } })).toThrow(/billing\.defaultCurrency/);
    expect(() => parseConfig({ model: { name: 'm' }, budgets: { perSession: '1', currency: 'GBP' } })).toThrow(/budgets\.currency/);
    expect(() => parseConfig({ model: { name: 'm' }, budgets: { perSession: 1 } })).toThrow(/budgets\.perSession/);
    expect(() => parseConfig({ model: { name: 'm' }, billing: { usdRates: { CNY: '0' } } })).toThrow(/billing\.usdRates\.CNY/);
    expect(
      parseConfig({ model: { name: 'm' }, billing: { currencyByCountry: { DE: 'EUR' }, usdRates: { EUR: '0.92' }, defaultCountry: 'DE' } }).billing,
    ).toMatchObject({ defaultCountry: 'DE' });
  });

  it('adds the rates given to the built-in CNY rate, so one rate for your own currency does not break the default CN mapping', () => {
    const billing = parseConfig({ model: { name: 'm' }, billing: { defaultCurrency: 'EUR', usdRates: { EUR: '0.92' } } }).billing;
    expect(billing.usdRates).toEqual({ CNY: '7.10', EUR: '0.92' });
    expect(billing.currencyByCountry).toEqual({ CN: 'CNY' });
    expect(parseConfig({ model: { name: 'm' }, billing: { usdRates: { CNY: '7.25' } } }).billing.usdRates).toEqual({ CNY: '7.25' });
  });

  it('checks every zone, language, country and currency at start, and keeps zones and languages in canonical spelling', () => {
    const model = { name: 'm' };
    expect(() => parseConfig({ model, agent: { timezone: 'Europe/Berln' } })).toThrow(/agent\.timezone.*"Europe\/Berln" is not an IANA time zone/s);
    expect(() => parseConfig({ model, agent: { language: 'english!' } })).toThrow(/agent\.language.*not a BCP-47 language tag/s);
    expect(() => parseConfig({ model, billing: { defaultCurrency: 'XYZ', usdRates: { XYZ: '1' } } })).toThrow(
      /billing\.defaultCurrency.*not an ISO 4217 currency code/s,
    );
    expect(() => parseConfig({ model, billing: { defaultCountry: 'QQ' } })).toThrow(/billing\.defaultCountry.*not an ISO 3166-1 country code/s);
    expect(() => parseConfig({ model, billing: { currencyByCountry: { ZZ: 'USD' } } })).toThrow(/billing\.currencyByCountry/);
    const agent = parseConfig({ model, agent: { timezone: 'europe/berlin', language: 'ZH-hant-tw' } }).agent;
    expect(agent.timezone).toBe('Europe/Berlin');
    expect(agent.language).toBe('zh-Hant-TW');
    // Intl may know Kyiv only as an alias of Kiev (Node 20's ICU): either way never the lower-case spelling as typed.
    expect(['Europe/Kyiv', 'Europe/Kiev']).toContain(parseConfig({ model, agent: { timezone: 'europe/kyiv' } }).agent.timezone);
    expect(parseConfig({ model, agent: { timezone: 'Europe/Kyiv' } }).agent.timezone).toBe('Europe/Kyiv');
  });

  it('refuses MCP settings Palaver cannot honour, saying why', () => {
    const hosted = { label: 'docs', url: 'http://127.0.0.1:9/mcp', mode: 'hosted' };
    const model = { name: 'm', provider: 'openai-responses' };
    expect(() => parseConfig({ model, mcp: { servers: [{ ...hosted, requireApproval: 'always' }] } })).toThrow(/requireApproval: only "never" is supported/);
    expect(() => parseConfig({ model, mcp: { servers: [{ ...hosted, userIdArgument: 'user_id' }] } })).toThrow(
      /userIdArgument: hosted mode cannot bind the user/,
    );
    // Approvals: only a server Palaver calls itself can hold a call for a yes, and only named tools, by a known decider.
    expect(() => parseConfig({ model, mcp: { servers: [{ ...hosted, approval: { tools: ['pay'], by: 'person' } }] } })).toThrow(
      /approval: hosted mode cannot wait for an approval/,
    );
    const local = { label: 'shop', url: 'http://127.0.0.1:9/mcp' };
    expect(() => parseConfig({ model, mcp: { servers: [{ ...local, approval: { tools: [], by: 'person' } }] } })).toThrow(/approval\.tools/);
    expect(() => parseConfig({ model, mcp: { servers: [{ ...local, approval: { tools: ['pay'], by: 'anyone' } }] } })).toThrow(/approval\.by/);
    expect(parseConfig({ model, mcp: { servers: [{ ...local, approval: { tools: ['pay'], by: 'operator' } }] } }).mcp.servers[0]!.approval).toEqual({
      tools: ['pay'],
      by: 'operator',
    });
    expect(() => parseConfig({ model, tools: { approvalTimeoutMinutes: 0 } })).toThrow(/tools\.approvalTimeoutMinutes/);
  });

  it('takes MCP tool labels as one text or one per language, and refuses an empty one', () => {
    const model = { name: 'm' };
    const server = { label: 'logistics', url: 'http://127.0.0.1:9/mcp' };
    const toolLabels = { cargo_add: { en: 'Adding your cargo…', uk: 'Додаю вантаж…' }, find_cargoes: 'Looking for cargo…' };
    expect(parseConfig({ model, mcp: { servers: [{ ...server, toolLabels }] } }).mcp.servers[0]?.toolLabels).toEqual(toolLabels);
    expect(() => parseConfig({ model, mcp: { servers: [{ ...server, toolLabels: { cargo_add: '' } }] } })).toThrow(/toolLabels/);
  });

  it('resolves identity locally by default, or through a directory MCP tool with its defaults and token kept secret', () => {
    const model = { name: 'm' };
    expect(parseConfig({ model }).identity.resolver).toEqual({ kind: 'local' });
    const config = parseConfig({ model, identity: { resolver: { kind: 'mcp', url: 'https://directory.example/mcp', bearerToken: 'directory-secret-1' } } });
    expect(config.identity.resolver).toEqual({
      kind: 'mcp',
      url: 'https://directory.example/mcp',
      tool: 'verify_user',
      bearerToken: 'directory-secret-1',
      timeoutMs: 10_000,
      cacheSize: 10_000,
      cacheTtlSeconds: 300,
    });
    expect(secretsOf(config)).toContain('directory-secret-1');
    expect(() => parseConfig({ model, identity: { resolver: { kind: 'mcp' } } })).toThrow(/identity\.resolver\.url/);
    expect(() => parseConfig({ model, identity: { resolver: { kind: 'local', url: 'https://directory.example/mcp' } } })).toThrow(ConfigError);
    expect(() => parseConfig({ model, identity: { resolver: { kind: 'ldap' } } })).toThrow(ConfigError);
  });

  it('dispatches tools inline by default; streams settings and the Redis URL (PALAVER_REDIS_URL) with its password kept secret', () => {
    const model = { name: 'm' };
    const plain = parseConfig({ model });
    expect(plain.tools).toEqual({
      dispatch: 'inline',
      callTimeoutMs: 15_000,
      maxAttempts: 3,
      reclaimIdleMs: 10_000,
      stream: 'events.plugins',
      group: 'plugins-workers',
      maxResultChars: 20_000,
      approvalTimeoutMinutes: 60,
    });
    // No prefix by default: the streams are named as seed 002 names them (events.plugins, rpc.plugins.responses:<id>).
    expect(plain.redis).toEqual({ url: 'redis://127.0.0.1:6379', keyPrefix: '' });
    expect(secretsOf(plain)).toEqual([]);

    const dir = tempDir();
    writeFileSync(join(dir, 'palaver.config.json'), JSON.stringify({ model, tools: { dispatch: 'streams', maxAttempts: 2 }, redis: { keyPrefix: 'shop-a:' } }));
    const { config } = loadConfig({ cwd: dir, env: { PALAVER_REDIS_URL: 'rediss://worker:s3cret%2Fpass@redis.internal:6380/2' } });
    expect(config.tools).toMatchObject({ dispatch: 'streams', maxAttempts: 2 });
    expect(config.redis).toEqual({ url: 'rediss://worker:s3cret%2Fpass@redis.internal:6380/2', keyPrefix: 'shop-a:' });
    expect(secretsOf(config).sort()).toEqual(['s3cret%2Fpass', 's3cret/pass']);

    let error: unknown;
    try {
      parseConfig({ model, redis: { url: 'http://:hunter2-password@redis.internal' } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain('redis.url');
    expect((error as ConfigError).message).not.toContain('hunter2');
    expect(() => parseConfig({ model, tools: { dispatch: 'kafka' } })).toThrow(/tools\.dispatch/);
  });
});
