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
    .action(async (options: { config?: string; port?: number }) => {
      const { startDevServer, summary } = await import('../dev/dev-server.js');
      const dev = await startDevServer({
        ...(options.config === undefined ? {} : { configFile: options.config }),
        ...(options.port === undefined ? {} : { port: options.port }),
      });
      console.log(`palaver dev: web chat ${dev.url}/  playground ${dev.url}/dev  (${summary(dev.files)})`);
      console.log('Watching the instructions, the config, the model rules and the tools module; Ctrl-C stops.');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      console.log('Stopping…');
      setTimeout(() => process.exit(1), 15_000).unref();
      await dev.close();
      process.exit(0);
    });
}
