/**
 * Runs the logistics example in one process: the example MCP server, a scripted model (unless `--real-model`) and
 * Palaver, either as a terminal chat (like `palaver chat`) or as the HTTP server with the web chat (like `palaver start`).
 *
 *   npx tsx examples/logistics/run.ts [chat|serve] [--port 3000] [--mcp-port 3100] [--data <dir>] [--real-model]
 *
 * Ctrl-C (or `/exit`, or the end of input in the chat) stops everything.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Channel, ConsoleChannel, createLogger, createPalaver, loadConfig, type Palaver, type PalaverConfig } from 'palaver';
import { startScriptedModelServer, type ScriptedModelServer } from 'palaver/testing';
import { startLogisticsMcpServer, type LogisticsMcpServer } from './mcp-server.js';
import { logisticsScript } from './scripted-model.js';

/** The folder of this example; relative paths in its config are resolved against it. */
export const EXAMPLE_DIR = dirname(fileURLToPath(import.meta.url));
export const CONFIG_FILE = join(EXAMPLE_DIR, 'palaver.config.yaml');
const MCP_LABEL = 'logistics';

export interface RunOptions {
  readonly mode: 'chat' | 'serve';
  /** HTTP port for `serve` (default: the config's `server.port`). */
  readonly port?: number;
  /** Port of the example MCP server (default: the port in the config's MCP url, 3100); 0 picks a free one. */
  readonly mcpPort?: number;
  /** Folder for the SQLite database (default: the config's `database.url`, i.e. `examples/logistics/data`). */
  readonly dataDir?: string;
  /** Use the model from the config and PALAVER_* environment instead of the scripted one. */
  readonly realModel: boolean;
  /** Conversation key of the terminal chat; the same key continues the same history. */
  readonly conversation: string;
}

const USAGE = `Usage: npx tsx examples/logistics/run.ts [chat|serve] [options]

  chat                 talk to the agent in this terminal (default)
  serve                start the HTTP server: web chat at /, AG-UI at POST /agui

  --port <n>           HTTP port for serve (default 3000)
  --mcp-port <n>       port of the example MCP server (default 3100; 0 = any free port)
  --data <dir>         folder for the SQLite database (default examples/logistics/data)
  --conversation <id>  conversation key of the terminal chat (default console)
  --real-model         use the model from palaver.config.yaml and PALAVER_* variables instead of the script
  -h, --help           show this help`;

/** Reads the command line. @throws Error with the usage text on a bad argument. */
export function parseRunArgs(argv: readonly string[]): RunOptions | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      'mcp-port': { type: 'string' },
      data: { type: 'string' },
      conversation: { type: 'string', default: 'console' },
      'real-model': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const mode = positionals[0] ?? 'chat';
  if ((mode !== 'chat' && mode !== 'serve') || positionals.length > 1) throw new Error(`Unknown command: ${positionals.join(' ')}\n\n${USAGE}`);
  return {
    mode,
    ...(values.port !== undefined ? { port: parsePort('--port', values.port) } : {}),
    ...(values['mcp-port'] !== undefined ? { mcpPort: parsePort('--mcp-port', values['mcp-port']) } : {}),
    ...(values.data !== undefined ? { dataDir: resolve(values.data) } : {}),
    realModel: values['real-model'],
    conversation: values.conversation,
  };
}

/** Everything the example started; `close` stops it in reverse order and is safe to call twice. */
export interface RunningExample {
  readonly palaver: Palaver;
  readonly mcp: LogisticsMcpServer;
  readonly model: ScriptedModelServer | undefined;
  readonly banner: string;
  close(): Promise<void>;
}

/**
 * Starts the MCP server, the scripted model (unless `realModel`) and Palaver with the example's config.
 * @throws ConfigError when the config (or a PALAVER_* variable) is invalid.
 */
export async function startExample(
  options: Omit<RunOptions, 'mode' | 'conversation'>,
  extra: { quietLogs?: boolean; channels?: readonly Channel[] } = {},
): Promise<RunningExample> {
  const started: { close(): Promise<void> }[] = [];
  const close = async (): Promise<void> => {
    for (const service of started.reverse()) await service.close();
    started.length = 0;
  };
  try {
    const model = options.realModel ? undefined : await startScriptedModelServer({ script: logisticsScript, models: ['logistics-script'] });
    if (model) started.push(model);
    const { config: loaded } = loadConfig({ file: CONFIG_FILE });
    const configured = loaded.mcp.servers.find((server) => server.label === MCP_LABEL);
    if (!configured?.bearerToken) throw new Error(`${CONFIG_FILE} must list an MCP server "${MCP_LABEL}" with a bearerToken`);
    const mcp = await startLogisticsMcpServer({ port: options.mcpPort ?? Number(new URL(configured.url).port), token: configured.bearerToken });
    started.push(mcp);

    // Applied after loadConfig, not as its `overrides`: PALAVER_* variables beat overrides there, and a flag (or
    // the scripted model) must beat a variable left in the shell. The MCP url is known only now (--mcp-port 0).
    const config: PalaverConfig = {
      ...loaded,
      mcp: { servers: loaded.mcp.servers.map((server) => (server.label === MCP_LABEL ? { ...server, url: mcp.url } : server)) },
      ...(model
        ? {
            model: {
              ...loaded.model,
              provider: 'openai-chat',
              name: 'logistics-script',
              baseUrl: model.baseUrl,
              apiKey: undefined, // the scripted server needs none: never send it a real model's key
              maxRetries: 0,
              fallback: undefined,
              // The scripted model is free; without a price Palaver would look it up in the price table and warn.
              prices: { 'logistics-script': { input: '0', output: '0' } },
            },
          }
        : {}),
      ...(options.dataDir ? { database: { url: `sqlite:${join(options.dataDir, 'logistics.db')}` } } : {}),
    };

    const palaver = await createPalaver(extra.channels ? { ...config, channels: { ...config.channels, web: { enabled: false } } } : config, {
      cwd: EXAMPLE_DIR,
      ...(extra.channels ? { channels: extra.channels } : {}),
      // The terminal chat keeps logs to warnings on stderr so they do not mix with the conversation.
      ...(extra.quietLogs
        ? { logger: createLogger({ level: config.log.level === 'info' ? 'warn' : config.log.level, destination: process.stderr }) }
        : { processMetrics: true }),
    });
    started.push(palaver);
    return { palaver, mcp, model, banner: banner(config, mcp, model), close };
  } catch (error) {
    await close();
    throw error;
  }
}

function banner(config: PalaverConfig, mcp: LogisticsMcpServer, model: ScriptedModelServer | undefined): string {
  return [
    `Logistics example: ${config.agent.name}, tools from the logistics MCP server at ${mcp.url} (cargo is kept in memory).`,
    model
      ? 'SCRIPTED MODEL: replies come from a deterministic script, not a real LLM. Add --real-model to use one.'
      : `Model: ${config.model.name} at ${config.model.baseUrl ?? 'https://api.openai.com/v1'}.`,
    'Try: "I am a client", "ship 200 kg from Kyiv to Lviv", "show my cargo";',
    '  or "I am a transporter", "find cargo to Lviv".',
  ].join('\n');
}

async function runChat(options: RunOptions): Promise<void> {
  // The example shows what each tool returned: it is there to show how the agent uses its tools.
  const channel = new ConsoleChannel({ input: process.stdin, output: process.stdout, conversationId: options.conversation, showToolDetails: true });
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

function parsePort(flag: string, value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`${flag} must be 0-65535, got ${value}`);
  return port;
}

// Run only when executed, so tests can import `startExample` and `parseRunArgs`.
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
