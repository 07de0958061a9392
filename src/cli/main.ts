import { createWriteStream, mkdirSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { Command, Option } from 'commander';
import { loadConfig, type PalaverConfig } from '../config/index.js';
import { dataFolder } from '../config/paths.js';
import type { Palaver, PalaverOptions } from '../app.js';
import type { TelegramNetworkOverride } from '../channels/telegram-user/client-factory.js';
import { ConsoleChannel } from '../channels/console/console-channel.js';
import { channelsOffOverride } from '../channels/registry.js';
import { PalaverError } from '../domain/errors.js';
import { createLogger } from '../observability/logger.js';
import { packageVersion } from '../platform/package-root.js';
import { adminCommand } from './admin.js';
import { devCommand } from './dev.js';
import type { Demo } from './demo.js';
import { initNextSteps, initProject } from './init.js';
import { recordServerAddress } from '../platform/server-address-file.js';
import { redactUrl } from './redact-url.js';
import { telegramCommand } from './telegram.js';

interface CommonOptions {
  readonly config?: string;
  /** `--demo` alone: the notes agent; `--demo salon`: the salon booking agent. */
  readonly demo?: boolean | 'notes' | 'salon';
}

/** What the code that runs the CLI may put in place of the real thing. */
export interface CliDeps {
  /** The way to Telegram of the user account, for `start` and `telegram …` (tests give the fake MTProto server's link). */
  readonly telegramUserNetwork?: TelegramNetworkOverride;
}

/** Entry point of the `palaver` command. */
export async function main(argv: readonly string[], deps: CliDeps = {}): Promise<void> {
  const program = new Command()
    .name('palaver')
    .description('Run LLM agents that talk with people over messaging channels.')
    .version(packageVersion(), '-V, --version', 'print the version of Palaver')
    .showHelpAfterError();
  const configOption = () => new Option('-c, --config <file>', 'config file (default: palaver.config.{json,yaml} or PALAVER_CONFIG)');
  const demoOption = () =>
    new Option('--demo [agent]', 'run a bundled demo agent with a scripted model (no API key needed): notes (default) or salon').choices(['notes', 'salon']);

  program
    .command('start')
    .description('start the HTTP server: web chat at /, AG-UI at POST /agui, /health, /metrics')
    .addOption(configOption())
    .addOption(demoOption())
    .option('-p, --port <port>', 'port to listen on (overrides config)', parsePort)
    .action(async (options: CommonOptions & { port?: number }) => {
      const { palaver, demo, configDir } = await boot(options, {
        processMetrics: true,
        ...(deps.telegramUserNetwork ? { telegramUserNetwork: deps.telegramUserNetwork } : {}),
      });
      for (const problem of await palaver.diagnose()) palaver.logger.warn({ problem }, 'configuration problem');
      let server: Awaited<ReturnType<typeof palaver.serve>>;
      try {
        server = await palaver.serve(options.port === undefined ? {} : { port: options.port });
      } catch (error) {
        // Nothing was accepted yet: release the database, channels and demo model, then exit 1 rather than run on
        // without a server.
        await palaver.close({ graceMs: 0 });
        await demo?.close();
        const port = options.port ?? palaver.config.server.port;
        console.error(
          `${error instanceof Error ? error.message : String(error)}\nChoose another port with --port <port> (now ${port}), or stop the process that uses it.`,
        );
        process.exit(1);
      }
      if (demo) console.log(`\n${demo.banner(palaver.config)}\n`);
      console.log(`Palaver is listening on ${server.url}  (web chat: ${server.url}/, AG-UI: POST ${server.url}/agui)`);
      // `palaver admin` in this folder finds this server from here, whatever --port it was given.
      const forgetAddress = recordServerAddress(dataFolder(palaver.config, configDir), server.url);
      await waitForSignal();
      forgetAddress();
      const graceMs = palaver.config.server.shutdownGraceMs;
      console.log(`Shutting down… (at most ${graceMs} ms for running turns; a second Ctrl-C or SIGTERM exits at once)`);
      // A backstop in case releasing the database or a tool connection hangs by itself.
      setTimeout(() => {
        console.error('Shutdown did not finish; exiting. Unanswered messages are answered after the next start.');
        process.exit(1);
      }, graceMs + 5_000).unref();
      await server.close();
      await palaver.close({ graceMs });
      await demo?.close();
      // Calls still open to a model or an API that does not answer would keep Node running; their work is left to
      // the next start (the inbox leases and the outbox make that safe).
      process.exit(0);
    });

  program
    .command('chat')
    .description('chat with the agent in this terminal (same database and history as the server)')
    .addOption(configOption())
    .addOption(demoOption())
    .option('--conversation <id>', 'conversation key; the same key continues the same history', 'console')
    .option('--tool-details', 'show each tool result, not only which tool ran')
    .action(async (options: CommonOptions & { conversation: string; toolDetails?: boolean }) => {
      let resetWords: readonly string[] = [];
      const channel = new ConsoleChannel({
        input: process.stdin,
        output: process.stdout,
        conversationId: options.conversation,
        showToolDetails: options.toolDetails === true,
        help: () => (resetWords.length === 0 ? [] : [`${resetWords.join(', ')}  start the conversation afresh (the agent forgets what was said)`]),
      });
      // The terminal is the only channel here: the web and Telegram channels belong to `start` (a second poller
      // would take the bot's updates from the running server, a second MTProto client would duplicate the session).
      const { palaver, demo, logFile } = await boot(options, { logToFile: true, channels: [channel], overrides: { channels: channelsOffOverride() } });
      resetWords = [...new Set(Object.values(palaver.config.reset.triggers).flat())].filter((word) => word.startsWith('/'));
      if (demo) console.log(`${demo.banner(palaver.config)}\n`);
      console.log(`Type a message and press Enter; /help lists the commands, /exit ends the chat. Logs: ${logFile}`);
      await channel.done;
      await palaver.close();
      await demo?.close();
    });

  program
    .command('worker')
    .description('run tool calls from the Redis stream (tools.dispatch "streams"): same config file as start')
    .addOption(configOption())
    .option('--metrics-port <port>', 'serve /metrics and /health on this port', parsePort)
    .option('--metrics-host <host>', 'interface for --metrics-port (default: server.host)')
    .action(async (options: CommonOptions & { metricsPort?: number; metricsHost?: string }) => {
      const { config } = loadConfigOrExit(options);
      const { startToolWorker } = await import('../worker.js');
      const worker = await startToolWorker(config, {
        processMetrics: true,
        ...(options.metricsPort === undefined ? {} : { metricsPort: options.metricsPort }),
        ...(options.metricsHost === undefined ? {} : { metricsHost: options.metricsHost }),
      });
      console.log(
        `Palaver worker ${worker.workerId} is running tool calls from ${config.redis.keyPrefix}${config.tools.stream} (group ${config.tools.group})${worker.metricsServer ? `; metrics at ${worker.metricsServer.url}/metrics` : ''}`,
      );
      await waitForSignal();
      console.log('Stopping: no new calls; finishing the calls this worker holds… (a second Ctrl-C or SIGTERM exits at once)');
      // A backstop for a tool that never returns: by then the runtime has given up on the call and published it again.
      setTimeout(() => {
        console.error('Held tool calls did not finish; exiting. Their entries stay pending and another worker takes them over.');
        process.exit(1);
      }, config.tools.callTimeoutMs + 5_000).unref();
      await worker.stop();
      console.log('Worker stopped.');
      process.exit(0);
    });

  program
    .command('migrate')
    .description('apply database migrations (start does this too)')
    .addOption(configOption())
    .action(async (options: CommonOptions) => {
      const { config } = loadConfigOrExit(options);
      // Each command loads what it uses: the runtime, the store, the demo's model server, the doctor.
      const { openStore } = await import('../store/open-store.js');
      const store = await openStore(config.database.url);
      await store.close();
      console.log(`Database is up to date: ${redactUrl(config.database.url)}`);
    });

  program
    .command('doctor')
    .description('check config, database and model endpoint, and say what is wrong')
    .addOption(configOption())
    .addOption(demoOption())
    .action(async (options: CommonOptions) => {
      const { runDoctor } = await import('./doctor.js');
      const ok = await runDoctor(
        { demo: options.demo !== undefined && options.demo !== false },
        { loadConfig: (overrides) => loadConfig({ ...(options.config ? { file: options.config } : {}), ...(overrides ? { overrides } : {}) }) },
      );
      if (!ok) process.exitCode = 1;
    });

  program
    .command('init')
    .description('create a project for your own agent: config, instructions, a TypeScript tool and a test')
    .argument('[dir]', 'folder to create it in', '.')
    .option('--palaver <spec>', "how the project depends on Palaver: a version, a git URL or a packed tarball (default: this Palaver's folder)")
    .option('--force', 'write into a folder that is not empty')
    .action((dir: string, options: { palaver?: string; force?: boolean }) => {
      initProject({ dir, ...(options.palaver === undefined ? {} : { palaver: options.palaver }), force: options.force === true });
      console.log(initNextSteps(dir));
    });

  program.addCommand(devCommand(configOption, parsePort));
  program.addCommand(adminCommand(configOption));
  program.addCommand(telegramCommand(configOption, deps.telegramUserNetwork));

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof PalaverError) {
      console.error(error.message);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}

async function boot(
  options: CommonOptions,
  extra: {
    processMetrics?: boolean;
    logToFile?: boolean;
    channels?: PalaverOptions['channels'];
    overrides?: Record<string, unknown>;
    telegramUserNetwork?: TelegramNetworkOverride;
  },
): Promise<{ palaver: Palaver; demo: Demo | undefined; configDir: string; logFile?: string }> {
  let demo: Demo | undefined;
  try {
    if (options.demo) demo = await (await import('./demo.js')).startDemo(options.demo === true ? 'notes' : options.demo);
    const { config, file } = loadConfigOrExit(options, { ...demo?.overrides, ...extra.overrides }, demo?.defaults);
    // The terminal chat writes its logs to a file, so no log line lands in the middle of the conversation.
    const logFile = extra.logToFile ? join(dataFolder(config, process.cwd()), 'chat.log') : undefined;
    if (logFile !== undefined) mkdirSync(dirname(logFile), { recursive: true });
    const palaverOptions: PalaverOptions = {
      ...(demo ? { tools: demo.toolsFor(config) } : {}),
      ...(extra.channels ? { channels: extra.channels } : {}),
      ...(extra.processMetrics ? { processMetrics: true } : {}),
      ...(extra.telegramUserNetwork ? { telegramUserNetwork: extra.telegramUserNetwork } : {}),
      ...(logFile === undefined
        ? {}
        : { logger: createLogger({ level: config.log.level, format: config.log.format, destination: createWriteStream(logFile, { flags: 'a' }) }) }),
    };
    const { createPalaver } = await import('../app.js');
    const configDir = file === undefined ? process.cwd() : dirname(file);
    return { palaver: await createPalaver(config, palaverOptions), demo, configDir, ...(logFile === undefined ? {} : { logFile }) };
  } catch (error) {
    await demo?.close();
    throw error;
  }
}

function loadConfigOrExit(
  options: CommonOptions,
  overrides?: Record<string, unknown>,
  defaults?: Record<string, unknown>,
): { config: PalaverConfig; file: string | undefined } {
  return loadConfig({ ...(options.config ? { file: options.config } : {}), ...(overrides ? { overrides } : {}), ...(defaults ? { defaults } : {}) });
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--port must be 0-65535, got ${value}`);
  return port;
}

/**
 * Resolves on the first SIGINT or SIGTERM. A second one exits at once (128 + its number, as a shell reports a
 * process killed by it): whoever sends it does not want to wait for the grace period.
 */
function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    let received = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (!received) {
        received = true;
        resolve();
        return;
      }
      console.error(`${signal} again: exiting now. Unanswered messages are answered after the next start.`);
      process.exit(128 + (constants.signals[signal] ?? 0));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
