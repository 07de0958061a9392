import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createPalaver } from '../../src/app.js';
import { parseConfig, secretsOf } from '../../src/config/index.js';
import { createLogger, createSecretScrubber, MIN_SECRET_LENGTH, REDACTED, withSecretScrubbing } from '../../src/observability/logger.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { recordRunLog } from '../support/run-log.js';

const KEY = TEST_SECRETS.modelApiKey;
const TOKEN = TEST_SECRETS.mcpBearerToken;

/** A destination that keeps the raw text, and also hands it to the run-wide log check. */
function capture(): { destination: Writable; text: () => string; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString());
      recordRunLog(chunk.toString());
      callback();
    },
  });
  const text = (): string => chunks.join('');
  return {
    destination,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

function logger(secrets: readonly string[] = [KEY, TOKEN]) {
  const out = capture();
  return { ...out, log: createLogger({ level: 'debug', destination: out.destination, secrets }) };
}

describe('createLogger({ secrets })', () => {
  it('scrubs a secret from nested causes, their stacks and the message pino builds from them', () => {
    const { log, text, lines } = logger();
    const root = new Error(`401 Incorrect API key provided: ${KEY}`);
    const middle = new Error(`gateway refused ${KEY} for /v1/chat`, { cause: root });
    const top = new Error('Model m refused the request', { cause: middle });

    log.warn({ err: top, model: 'm' }, 'model call failed');

    expect(text()).not.toContain(KEY);
    const [line] = lines();
    const err = line?.['err'] as { message: string; stack: string };
    expect(err.message).toBe(`Model m refused the request: gateway refused ${REDACTED} for /v1/chat: 401 Incorrect API key provided: ${REDACTED}`);
    expect(err.stack).toContain(`caused by: Error: 401 Incorrect API key provided: ${REDACTED}`);
    expect(line).toMatchObject({ model: 'm', msg: 'model call failed' });
  });

  it('scrubs response bodies and other enumerable error fields, and the message itself', () => {
    const { log, text } = logger();
    const error = Object.assign(new Error('refused'), { status: 401, error: { message: `bad key ${KEY}`, body: JSON.stringify({ echo: TOKEN }) } });

    log.error({ err: error }, `call with ${TOKEN} failed`);

    expect(text()).not.toContain(KEY);
    expect(text()).not.toContain(TOKEN);
    expect(text()).toContain(`"status":401`);
  });

  it('scrubs secrets in their JSON-escaped and URL-encoded forms, and a longer secret holding a shorter one whole', () => {
    const quoted = 'pass"word\\with-quote';
    const colon = '123456:abc/def+ghi';
    const outer = `${KEY}-rotated`;
    const { log, text } = logger([KEY, outer, quoted, colon]);

    log.info({ body: JSON.stringify({ quoted }), url: `https://api.example/bot${encodeURIComponent(colon)}/send`, outer }, 'sent');

    expect(text()).not.toContain(JSON.stringify(quoted).slice(1, -1));
    expect(text()).not.toContain(encodeURIComponent(colon));
    expect(text()).not.toContain('-rotated');
    expect(text()).toContain(`"outer":"${REDACTED}"`);
  });

  it('censors credential query parameters and bearer tokens it does not know', () => {
    const { log, text, lines } = logger([]);
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXZhbHVl';

    log.info({ url: 'https://mcp.example/sse?token=abc123&user=alice&API_KEY=k-1#frag' }, 'connecting');
    log.warn(`upstream said: Authorization: Bearer ${jwt} is expired`);

    expect(lines()[0]?.['url']).toBe(`https://mcp.example/sse?token=${REDACTED}&user=alice&API_KEY=${REDACTED}#frag`);
    expect(text()).not.toContain(jwt);
    expect(lines()[1]?.['msg']).toBe(`upstream said: Authorization: Bearer ${REDACTED} is expired`);
    // Not a credential: ordinary words after "bearer" and parameters that merely end in a sensitive name stay.
    log.info('check its bearer token; see https://x.example/?monkey=1&keyboard=2');
    expect(lines()[2]?.['msg']).toBe('check its bearer token; see https://x.example/?monkey=1&keyboard=2');
  });

  it("censors an operator's token wherever it turns up, though no config names it", () => {
    const { log, text, lines } = logger([]);
    const token = `pvo_${'Zx9_-'.repeat(8)}abc`;
    log.warn({ body: `{"token":"${token}"}` }, `pasted ${token} into the chat`);
    expect(text()).not.toContain(token);
    expect(lines()[0]?.['msg']).toBe(`pasted ${REDACTED} into the chat`);
  });

  it('censors credential fields and the request/config objects HTTP clients attach to errors', () => {
    const { log, lines } = logger([]);
    const error = Object.assign(new Error('request failed'), {
      config: { url: 'https://api.example', headers: { Authorization: 'Bearer short' } },
      request: { path: '/v1' },
      headers: { 'set-cookie': 'sid=1' },
    });

    log.error({ err: error, headers: { authorization: 'Bearer x', cookie: 'sid=2', accept: 'json' }, apiKey: 'k', server: { bearerToken: 't' } }, 'failed');

    expect(lines()[0]).toMatchObject({
      err: { config: REDACTED, request: REDACTED, headers: REDACTED, message: 'request failed' },
      headers: { authorization: REDACTED, cookie: REDACTED, accept: 'json' },
      apiKey: REDACTED,
      server: { bearerToken: REDACTED },
    });
  });

  it('child loggers inherit the scrubber, also with their own options', () => {
    const { log, text } = logger();
    const child = log.child({ correlationId: 'c-1' });
    const grandchild = child.child({ tool: 't' }, { level: 'trace', serializers: { extra: (value: unknown) => `extra ${String(value)}` } });

    child.info(`child ${KEY}`);
    grandchild.trace({ extra: TOKEN }, 'grandchild');
    log.child({ leaked: KEY }).info('bindings are scrubbed too');

    expect(text()).not.toContain(KEY);
    expect(text()).not.toContain(TOKEN);
    expect(text().split('\n').filter(Boolean)).toHaveLength(3);
  });

  it(`does not scrub secrets shorter than ${MIN_SECRET_LENGTH} characters by value, but still censors them by field`, () => {
    const { log, lines } = logger(['abc', 'pass12']);

    log.info({ apiKey: 'abc', note: 'abc and pass12 are ordinary text here' }, 'abcdef');

    expect(lines()[0]).toMatchObject({ apiKey: REDACTED, note: 'abc and pass12 are ordinary text here', msg: 'abcdef' });
  });

  it('leaves a line without secrets as it is: the same string back from the scrubber, the same bytes from the logger', () => {
    const scrub = createSecretScrubber([KEY, TOKEN, TEST_SECRETS.fallbackApiKey]);
    const line = '{"level":30,"time":1,"app":"palaver","correlationId":"c-1","url":"https://x.example/v1?user=alice","msg":"model call"}\n';
    expect(scrub(line)).toBe(line);

    // Sanity, not a timing: many lines pass through one precompiled expression without error or change.
    const many = Array.from({ length: 10_000 }, (_, index) => line.replace('c-1', `c-${index}`));
    expect(many.every((text) => scrub(text) === text)).toBe(true);

    const withSecrets = logger();
    const without = capture();
    const plain = createLogger({ level: 'debug', destination: without.destination });
    for (const target of [withSecrets.log, plain]) target.info({ correlationId: 'c-1', n: 1 }, 'turn done');
    const strip = (text: string): string => text.replace(/"time":\d+/, '');
    expect(strip(withSecrets.text())).toBe(strip(without.text()));
  });
});

describe('withSecretScrubbing(logger, secrets)', () => {
  it("scrubs every line of the wrapped logger and its children, after the logger's own hook", () => {
    const out = capture();
    const seen: string[] = [];
    const theirs = pino({ level: 'debug', hooks: { streamWrite: (line) => (seen.push(line), line.replace('"app"', '"application"')) } }, out.destination);
    const wrapped = withSecretScrubbing(theirs, [KEY]);

    wrapped.child({ channel: 'web' }).warn({ err: new Error('outer', { cause: new Error(KEY) }) }, 'failed');
    wrapped.info({ apiKey: 'short' }, `key ${KEY}`);

    expect(out.text()).not.toContain(KEY);
    expect(seen).toHaveLength(2); // their hook still runs
    expect(out.lines()[1]).toMatchObject({ apiKey: REDACTED, msg: `key ${REDACTED}` });
  });

  it('keeps the redact paths of a logger that has its own, and leaves the original logger untouched', () => {
    const out = capture();
    const theirs = pino({ level: 'debug', redact: ['custom'] }, out.destination);
    const wrapped = withSecretScrubbing(theirs, [KEY]);

    wrapped.info({ custom: 'x', note: KEY }, 'wrapped');
    theirs.info({ note: 'unwrapped' }, 'original');

    expect(out.lines()[0]).toMatchObject({ custom: '[Redacted]', note: REDACTED });
    expect(out.lines()[1]).toMatchObject({ note: 'unwrapped' });
  });
});

describe('secretsOf(config)', () => {
  it('finds every secret field of a config, the database password, and secret-named fields added later', () => {
    const config = parseConfig({
      model: { name: 'm', apiKey: KEY, fallback: { name: 'f', apiKey: TEST_SECRETS.fallbackApiKey } },
      server: { apiKey: TEST_SECRETS.serverApiKey },
      mcp: {
        servers: [
          { label: 'a', url: 'http://127.0.0.1:1/mcp', bearerToken: TOKEN },
          { label: 'b', url: 'http://127.0.0.1:2/mcp' },
        ],
      },
      database: { url: 'postgres://palaver:p%40ss-word-42@db.example/palaver' },
    });

    expect(secretsOf(config).sort()).toEqual([KEY, TEST_SECRETS.fallbackApiKey, TEST_SECRETS.serverApiKey, TOKEN, 'p%40ss-word-42', 'p@ss-word-42'].sort());

    const later = {
      telegram: { botToken: TEST_SECRETS.telegramToken },
      web: {
        cookieSecret: TEST_SECRETS.cookieSecret,
        cookieSecretFile: '/tmp/f',
        userTokens: { secret: TEST_SECRETS.jwtSecret, secrets: ['old-jwt-secret-1'] },
      },
      model: { maxTokens: 5 },
    };
    expect(secretsOf(later).sort()).toEqual([TEST_SECRETS.telegramToken, TEST_SECRETS.cookieSecret, TEST_SECRETS.jwtSecret, 'old-jwt-secret-1'].sort());
  });

  it('finds credential headers of MCP servers and the identity directory, and leaves the others readable', () => {
    const config = parseConfig({
      model: { name: 'm' },
      mcp: {
        servers: [
          {
            label: 'logistics',
            url: 'http://127.0.0.1:1/mcp',
            mode: 'hosted',
            headers: { 'MCP-Protocol-Version': '2025-06-18', Authorization: 'Bearer hosted-header-token-1', 'X-Api-Key': 'hosted-api-key-22' },
          },
        ],
      },
      identity: {
        resolver: { kind: 'mcp', url: 'https://directory.example/mcp', headers: { 'X-Tenant': 'acme-tenant', 'X-Directory-Token': 'directory-header-3' } },
      },
    });
    expect(secretsOf(config).sort()).toEqual(['Bearer hosted-header-token-1', 'hosted-header-token-1', 'directory-header-3', 'hosted-api-key-22'].sort());
  });

  it('finds the password of a MariaDB/MySQL database URL', () => {
    for (const scheme of ['mysql', 'mariadb']) {
      const config = parseConfig({ model: { name: 'm' }, database: { url: `${scheme}://palaver:my%23sql-pass-7@db.example:3306/palaver` } });
      expect(secretsOf(config).sort()).toEqual(['my#sql-pass-7', 'my%23sql-pass-7']);
    }
  });

  it('finds the web cookie and user-token secrets, also when they come from the environment', () => {
    const config = parseConfig({
      model: { name: 'm' },
      channels: { web: { cookieSecret: TEST_SECRETS.cookieSecret, userTokens: { secret: TEST_SECRETS.jwtSecret } } },
    });
    expect(secretsOf(config).sort()).toEqual([TEST_SECRETS.cookieSecret, TEST_SECRETS.jwtSecret].sort());
  });

  it('finds none in a config without credentials', () => {
    expect(secretsOf(parseConfig({ model: { name: 'm' }, database: { url: 'sqlite::memory:' } }))).toEqual([]);
  });
});

describe('a secret Palaver comes to hold after start', () => {
  it('censors the web cookie secret it generated into a file, in every later line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-scrub-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    const out = capture();
    const palaver = await createPalaver(
      {
        model: { name: 'm', baseUrl: 'http://127.0.0.1:9/v1' },
        database: { url: 'sqlite::memory:' },
        agent: { instructionsDir: join(dir, 'instructions') },
        channels: { web: { cookieSecretFile: join(dir, 'cookie-secret') } },
      },
      { logger: pino({ level: 'info' }, out.destination) },
    );
    try {
      const generated = readFileSync(join(dir, 'cookie-secret'), 'utf8').trim();
      expect(generated.length).toBeGreaterThanOrEqual(32);
      palaver.logger.error({ err: new Error(`signing with ${generated} failed`) }, `cookie check failed for ${generated}`);
      expect(out.text()).toContain('cookie check failed for');
      expect(out.text()).not.toContain(generated);
    } finally {
      await palaver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
