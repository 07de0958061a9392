/**
 * Runs the receptionist example: a scripted model (unless `--real-model`) and Palaver with replies as actions, as a
 * terminal chat (like `palaver chat`) or as the HTTP server with the web chat, and the Telegram bot when
 * TELEGRAM_BOT_TOKEN is set (like `palaver start`).
 *
 *   npx tsx examples/receptionist/run.ts [chat|serve] [--port 3000] [--data <dir>] [--real-model]
 *
 * Ctrl-C (or `/exit`, or the end of input in the chat) stops everything.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Channel, ConsoleChannel, createLogger, createPalaver, loadConfig, type Palaver, type PalaverConfig } from 'palaver';
import { startScriptedModelServer, type ScriptedModelServer } from 'palaver/testing';
import { receptionistScript } from './scripted-model.js';

/** The folder of this example; relative paths in its config are resolved against it. */
export const EXAMPLE_DIR = dirname(fileURLToPath(import.meta.url));
export const CONFIG_FILE = join(EXAMPLE_DIR, 'palaver.config.yaml');

export interface RunOptions {
  readonly mode: 'chat' | 'serve';
  /** HTTP port for `serve` (default: the config's `server.port`). */
  readonly port?: number;
  /** Folder for the SQLite database (default: the config's, `examples/receptionist/data`). */
  readonly dataDir?: string;
  /** Use the model from the config and PALAVER_* environment instead of the scripted one. */
  readonly realModel: boolean;
}

const USAGE = `Usage: npx tsx examples/receptionist/run.ts [chat|serve] [options]

  chat                 talk to the receptionist in this terminal (default)
  serve                start the HTTP server: web chat at /, AG-UI at POST /agui; the Telegram bot too when
                       TELEGRAM_BOT_TOKEN is set

  --port <n>           HTTP port for serve (default 3000)
  --data <dir>         folder for the SQLite database (default examples/receptionist/data)
  --real-model         use the model from palaver.config.yaml and PALAVER_* variables instead of the script
  -h, --help           show this help`;

/** Reads the command line. @throws Error with the usage text on a bad argument. */
export function parseRunArgs(argv: readonly string[]): RunOptions | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      data: { type: 'string' },
      'real-model': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const mode = positionals[0] ?? 'chat';
  if ((mode !== 'chat' && mode !== 'serve') || positionals.length > 1) throw new Error(`Unknown command: ${positionals.join(' ')}\n\n${USAGE}`);
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65_535)) throw new Error(`--port must be 0-65535, got ${values.port}`);
  return {
    mode,
    ...(port === undefined ? {} : { port }),
    ...(values.data === undefined ? {} : { dataDir: resolve(values.data) }),
    realModel: values['real-model'],
  };
}

/** Everything the example started; `close` stops it in reverse order and is safe to call twice. */
export interface RunningExample {
  readonly palaver: Palaver;
  readonly model: ScriptedModelServer | undefined;
  readonly banner: string;
  close(): Promise<void>;
}

/**
 * Starts the scripted model (unless `realModel`) and Palaver with the example's config. `extra.channels` replace the
 * web chat (the terminal chat, or a test's channel); `extra.configure` adjusts the loaded config last.
 * @throws ConfigError when the config (or a PALAVER_* variable) is invalid.
 */
export async function startExample(
  options: Omit<RunOptions, 'mode'>,
  extra: { quietLogs?: boolean; channels?: readonly Channel[]; configure?: (config: PalaverConfig) => PalaverConfig } = {},
): Promise<RunningExample> {
  const model = options.realModel ? undefined : await startScriptedModelServer({ script: receptionistScript, models: ['receptionist-script'] });
  try {
    const { config: loaded } = loadConfig({ file: CONFIG_FILE });
    // Applied after loadConfig, not as its `overrides`: PALAVER_* variables beat overrides there, and a flag (or the
    // scripted model) must beat a variable left in the shell.
    let config: PalaverConfig = {
      ...loaded,
      ...(model
        ? {
            model: {
              ...loaded.model,
              provider: 'openai-chat',
              name: 'receptionist-script',
              baseUrl: model.baseUrl,
              apiKey: undefined, // the scripted server needs none: never send it a real model's key
              maxRetries: 0,
              fallback: undefined,
              // The scripted model is free; without a price Palaver would look it up in the price table and warn.
              prices: { 'receptionist-script': { input: '0', output: '0' } },
            },
          }
        : {}),
      ...(options.dataDir ? { database: { url: `sqlite:${join(options.dataDir, 'receptionist.db')}` } } : {}),
    };
    if (extra.channels) config = { ...config, channels: { ...config.channels, web: { ...config.channels.web, enabled: false } } };
    if (extra.configure) config = extra.configure(config);
    const palaver = await createPalaver(config, {
      cwd: EXAMPLE_DIR,
      ...(extra.channels ? { channels: extra.channels } : {}),
      // The terminal chat keeps logs to warnings on stderr so they do not mix with the conversation.
      ...(extra.quietLogs ? { logger: createLogger({ level: config.log.level === 'info' ? 'warn' : config.log.level, destination: process.stderr }) } : {}),
    });
    let closed = false;
    return {
      palaver,
      model,
      banner: banner(config, model),
      async close() {
        if (closed) return;
        closed = true;
        await palaver.close();
        await model?.close();
      },
    };
  } catch (error) {
    await model?.close();
    throw error;
  }
}

function banner(config: PalaverConfig, model: ScriptedModelServer | undefined): string {
  return [
    `Receptionist example: ${config.agent.name} of Harbour Dental, answering with replies as actions.`,
    model
      ? 'SCRIPTED MODEL: replies come from a deterministic script, not a real LLM. Add --real-model to use one.'
      : `Model: ${config.model.name} at ${config.model.baseUrl ?? 'https://api.openai.com/v1'}.`,
    'Try: "hello", "I would like to book a check-up", "Thursday please", "thanks!", then "ok".',
  ].join('\n');
}

async function runChat(options: RunOptions): Promise<void> {
  const channel = new ConsoleChannel({ input: process.stdin, output: process.stdout });
  const example = await startExample(options, { quietLogs: true, channels: [channel] });
  console.log(`${example.banner}\n`);
  console.log('Type a message and press Enter; /exit ends the chat.');
  // Ctrl-C ends the chat the same way /exit does, so the database is closed properly.
  const stop = (): void => void channel.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await channel.done;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await example.close();
  }
}

async function runServe(options: RunOptions): Promise<void> {
  const example = await startExample(options);
  try {
    const server = await example.palaver.serve(options.port === undefined ? {} : { port: options.port });
    console.log(`\n${example.banner}\n`);
    console.log(`Palaver is listening on ${server.url}  (web chat: ${server.url}/, AG-UI: POST ${server.url}/agui)`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
    });
    console.log('Shutting down…');
    await server.close();
  } finally {
    await example.close();
  }
}

// Run only when executed, so tests can import `startExample`.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    const options = parseRunArgs(process.argv.slice(2));
    if (options === 'help') console.log(USAGE);
    else if (options.mode === 'serve') await runServe(options);
    else await runChat(options);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  }
}
