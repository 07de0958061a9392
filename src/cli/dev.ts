import { Command, type Option } from 'commander';

/**
 * `palaver dev`: the agent on loopback, rebuilt when its instructions, config, offline model rules or tools change,
 * with the playground at /dev. Loads the dev server only when run.
 */
export function devCommand(configOption: () => Option, parsePort: (value: string) => number): Command {
  return new Command('dev')
    .description('run the agent on 127.0.0.1, reload it when its files change, and show each turn at /dev (the playground)')
    .addOption(configOption())
    .option('-p, --port <port>', 'port to listen on (overrides config)', parsePort)
    .option('--telegram', 'also run the bot on a local Telegram sandbox: a page where you write as Telegram users and see what the bot sends')
    .action(async (options: { config?: string; port?: number; telegram?: boolean }) => {
      const { startDevServer, summary } = await import('../dev/dev-server.js');
      const sandbox = options.telegram ? await (await import('../dev/telegram-sandbox/telegram-sandbox.js')).startTelegramSandbox() : undefined;
      // The sandbox's fake Bot API stands in for Telegram; a short quiet window, since nobody types slowly here.
      const overrides = sandbox && { channels: { telegram: { token: sandbox.token, apiRoot: sandbox.apiRoot, mode: 'polling', quietWindowMs: 300 } } };
      const dev = await startDevServer({
        ...(options.config === undefined ? {} : { configFile: options.config }),
        ...(options.port === undefined ? {} : { port: options.port }),
        ...(overrides === undefined ? {} : { overrides }),
      }).catch(async (error: unknown) => {
        await sandbox?.close();
        throw error;
      });
      console.log(`palaver dev: web chat ${dev.url}/  playground ${dev.url}/dev  (${summary(dev.files)})`);
      if (sandbox) console.log(`Telegram sandbox: ${sandbox.url} (the bot answers there as it would on Telegram)`);
      console.log('Watching the instructions, the config, the model rules and the tools module; Ctrl-C stops.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      console.log('Stopping…');
      setTimeout(() => process.exit(1), 15_000).unref();
      await dev.close();
      await sandbox?.close();
      process.exit(0);
    });
}
