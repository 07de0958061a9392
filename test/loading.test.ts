// What importing Palaver loads. A Node child imports the source entry through tsx, with a resolve hook that records
// every module it resolves (ESM) and the CommonJS cache at the end (packages such as pino and yaml are required),
// and reports the packages it saw. Adapters must load only when the config uses them (issue 8).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../src/testing/index.js';

const root = new URL('..', import.meta.url);
const entry = new URL('src/index.ts', root).href;
const work = mkdtempSync(join(tmpdir(), 'palaver-loading-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// Registered after tsx, so it runs first and sees the final URL of every specifier.
const HOOKS = `
let port;
export function initialize(data) {
  port = data.port;
  // Answers a flush: the port keeps order, so every URL posted before has arrived once the answer does.
  port.on('message', (message) => { if (message === 'flush') port.postMessage('flushed'); });
  port.unref();
}
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`;

const RECORDER = `
import { register, createRequire } from 'node:module';
import { MessageChannel } from 'node:worker_threads';
const { port1, port2 } = new MessageChannel();
const seen = new Set();
port1.on('message', (url) => seen.add(url));
port1.unref();
register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)}, { data: { port: port2 }, transferList: [port2] });
globalThis.__palaverLoaded = async () => {
  // The hooks thread posts asynchronously: wait for its answer to a flush, which comes after its last URL.
  await new Promise((resolve) => {
    const onFlushed = (message) => {
      if (message !== 'flushed') return;
      port1.off('message', onFlushed);
      port1.unref();
      resolve();
    };
    port1.on('message', onFlushed);
    port1.ref();
    port1.postMessage('flush');
  });
  const urls = [...seen, ...Object.keys(createRequire(import.meta.url).cache).map((path) => 'file://' + path)];
  const packages = new Set();
  for (const url of urls) {
    const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(url);
    if (match) packages.add(match[1]);
  }
  return [...packages].sort();
};`;

const recorder = join(work, 'recorder.mjs');
writeFileSync(recorder, RECORDER);

/** Runs `body` (an ES module with top-level await; `entry` is Palaver's entry URL) and returns the packages it loaded. */
async function packagesLoadedBy(body: string, from: string = entry): Promise<string[]> {
  const script = join(work, `script-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(script, `const entry = ${JSON.stringify(from)};\n${body}\nprocess.stdout.write(JSON.stringify(await globalThis.__palaverLoaded()));\n`);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--no-warnings', '--import', 'tsx', '--import', pathToFileURL(recorder).href, script],
      { cwd: new URL('.', root).pathname, timeout: 30_000 },
      (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
    );
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
}

/** The packages a Palaver created from `config` (over a scripted model and a SQLite file in `name`) loads, then closed. */
async function packagesLoadedByPalaver(name: string, config: Record<string, unknown>, from: string = entry): Promise<string[]> {
  const instructions = join(work, 'instructions');
  mkdirSync(instructions, { recursive: true });
  writeFileSync(join(instructions, 'base.md'), 'You are a test agent.');
  const full = {
    model: { name: 'scripted', baseUrl: 'http://127.0.0.1:9/v1' },
    database: { url: `sqlite:${join(work, name, 'palaver.db')}` },
    agent: { instructionsDir: instructions },
    ...config,
  };
  return packagesLoadedBy(
    `
    const { createPalaver, silentLogger } = await import(entry);
    const palaver = await createPalaver(${JSON.stringify(full)}, { logger: silentLogger() });
    await palaver.close();`,
    from,
  );
}

/** Packages that only an adapter the config names may load. */
const ADAPTERS = [
  /^openai$/,
  /^@modelcontextprotocol\//,
  /^kysely$/,
  /^pg$/,
  /^pg-/,
  /^better-sqlite3$/,
  /^hono$/,
  /^@hono\//,
  /^@ag-ui\//,
  /^yaml$/,
  /^jose$/,
  /^@pydantic\/genai-prices$/,
];
const adaptersIn = (packages: readonly string[], allowed: readonly RegExp[] = []): string[] =>
  packages.filter((name) => ADAPTERS.some((pattern) => pattern.test(name)) && !allowed.some((pattern) => pattern.test(name)));

describe('loading only what is used', () => {
  it('the recorder sees packages (a check of the check)', async () => {
    const loaded = await packagesLoadedBy(
      `await import(${JSON.stringify(import.meta.resolve('hono'))}); await import(${JSON.stringify(import.meta.resolve('pino'))});`,
    );
    expect(loaded).toEqual(expect.arrayContaining(['hono', 'pino']));
  });

  it('importing defineTool loads no HTTP server, database driver, model SDK, MCP SDK, AG-UI or YAML parser', async () => {
    const loaded = await packagesLoadedBy(`
      const { defineTool } = await import(entry);
      const { z } = await import(${JSON.stringify(import.meta.resolve('zod'))});
      defineTool({ name: 'noop', description: 'Does nothing.', input: z.object({}), run: () => 'ok' });`);
    expect(adaptersIn(loaded)).toEqual([]);
    // Logging and metrics libraries load when a Palaver is created, not with the entry.
    expect(loaded).not.toContain('prom-client');
  });

  it('createPalaver on SQLite without MCP servers or the web channel loads no pg, MCP SDK, hono or AG-UI', async () => {
    const loaded = await packagesLoadedByPalaver('sqlite-only', { channels: { web: { enabled: false } } });
    // The model SDK and the SQLite engine are what this config uses (better-sqlite3 on Node 20, node:sqlite later).
    expect(adaptersIn(loaded, [/^openai$/, /^kysely$/, /^better-sqlite3$/])).toEqual([]);
    expect(loaded).toContain('kysely');
    // Palaver's texts with placeholders are parsed (intl-messageformat) when one is first sent, not at start.
    expect(loaded).not.toContain('intl-messageformat');
  });

  it('the Telegram channel starts without the model SDK: voice transcription loads it with the first voice message', async () => {
    const telegram = await startFakeTelegram();
    try {
      const loaded = await packagesLoadedByPalaver('telegram', {
        channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot } },
      });
      expect(loaded).toContain('grammy');
      expect(adaptersIn(loaded, [/^kysely$/, /^better-sqlite3$/])).toEqual([]);
    } finally {
      await telegram.close();
    }
  });

  it('loading a JSON config loads no YAML parser', async () => {
    const file = join(work, 'palaver.config.json');
    writeFileSync(file, JSON.stringify({ model: { name: 'scripted', baseUrl: 'http://127.0.0.1:9/v1' } }));
    const loaded = await packagesLoadedBy(`
      const { loadConfig } = await import(entry);
      loadConfig({ file: ${JSON.stringify(file)} });`);
    expect(loaded).not.toContain('yaml');
  });
});
