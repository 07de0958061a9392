import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { createPalaver, type Palaver, type PalaverOptions } from '../../src/app.js';
import { parseConfig, secretsOf, type PalaverConfigInput } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { startScriptedModelServer, type ModelScript, type ScriptedModelServer } from '../../src/testing/index.js';
import { recordRunLog, registerRunSecrets } from './run-log.js';
import { TEST_SECRETS } from './secrets.js';

export interface Harness {
  readonly dir: string;
  readonly model: ScriptedModelServer;
  readonly databaseUrl: string;
  /** Every log line written so far, parsed. */
  readonly logs: Record<string, unknown>[];
  /** Every log line written so far, as the raw text pino wrote (search this for secrets, not the parsed fields). */
  logText(): string;
  /** Starts (or restarts, on the same database) a Palaver. */
  start(config?: PalaverConfigInput | Record<string, unknown>, options?: PalaverOptions): Promise<Palaver>;
  close(): Promise<void>;
}

/**
 * A Palaver on a real SQLite file in a temp folder, talking over real HTTP to a scripted model server.
 * Instruction files: `base.md`, plus any given in `instructions`.
 *
 * The model key and web cookie secret are {@link TEST_SECRETS}' unless a test sets its own. Every log line also goes to the
 * run-wide log, and the config's secrets are registered, so the run fails if any test's log holds one of them.
 * The logger is passed in without secrets: scrubbing it is `createPalaver`'s job, and the check proves it does.
 */
export async function createHarness(script: ModelScript, instructions: Record<string, string> = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-test-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  for (const [name, text] of Object.entries(instructions)) writeFileSync(join(dir, 'instructions', `${name}.md`), text);
  const model = await startScriptedModelServer({ script });
  const databaseUrl = `sqlite:${join(dir, 'data', 'palaver.db')}`;
  const logs: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new PassThrough();
  sink.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    raw.push(text);
    recordRunLog(text);
    for (const line of text.split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  const running: Palaver[] = [];
  return {
    dir,
    model,
    databaseUrl,
    logs,
    logText: () => raw.join(''),
    async start(config = {}, options = {}) {
      const base = {
        model: { name: 'scripted', baseUrl: model.baseUrl, apiKey: TEST_SECRETS.modelApiKey, maxRetries: 0, timeoutMs: 5_000 },
        database: { url: databaseUrl },
        agent: { instructionsDir: join(dir, 'instructions') },
        log: { level: 'debug' },
        // A fixed cookie secret instead of a generated one, so the run-wide check knows it too.
        channels: { web: { cookieSecret: TEST_SECRETS.cookieSecret } },
      };
      const merged = merge(base, config as Record<string, unknown>) as PalaverConfigInput;
      try {
        registerRunSecrets(secretsOf(parseConfig(merged)));
      } catch {
        // an invalid config: createPalaver throws below, and logs nothing
      }
      const palaver = await createPalaver(merged, {
        logger: createLogger({ level: 'debug', destination: sink }),
        ...options,
      });
      running.push(palaver);
      return palaver;
    },
    async close() {
      await Promise.all(running.map((palaver) => palaver.close()));
      await model.close();
    },
  };
}

/** `extra` merged into `base`, objects key by key (a config and the overrides a test gives). */
export function merge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] =
      typeof current === 'object' && current !== null && !Array.isArray(current) && typeof value === 'object' && value !== null && !Array.isArray(value)
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/** The text of the last user message the model saw in a call. */
export function lastUserText(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string | undefined {
  return [...call.messages].reverse().find((item) => item.type === 'message' && item.role === 'user')?.content;
}

/** The texts of every user message the model saw in a call, in order. */
export function userTexts(call: { messages: readonly { type: string; role?: string; content?: string }[] }): string[] {
  return call.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content ?? ''] : []));
}
