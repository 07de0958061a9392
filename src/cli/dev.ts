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
    .option('--telegram-user', "also run channels.telegramUser on the sandbox (implies --telegram): write to the owner's account as a person, or as its owner")
    .action(async (options: { config?: string; port?: number; telegram?: boolean; telegramUser?: boolean }) => {
      const { startDevServer, summary } = await import('../dev/dev-server.js');
      let dev: Awaited<ReturnType<typeof startDevServer>> | undefined;
      const ownerTakeoverMinutes = () => dev?.palaver?.config.channels.telegramUser.ownerTakeoverMinutes;
      const sandbox =
        options.telegram || options.telegramUser
          ? await (await import('../dev/telegram-sandbox/telegram-sandbox.js')).startTelegramSandbox({
              ...(options.telegramUser ? { userAccount: { ownerTakeoverMinutes } } : {}),
            })
          : undefined;
      // The sandbox's fakes stand in for Telegram; short quiet windows, since nobody types slowly here.
      const account = sandbox?.userAccount;
      const overrides = sandbox && {
        channels: {
          telegram: { token: sandbox.token, apiRoot: sandbox.apiRoot, mode: 'polling', quietWindowMs: 300 },
          ...(account ? { telegramUser: { enabled: true, ...account.settings, quietWindowMs: 300 } } : {}),
        },
      };
      dev = await startDevServer({
        ...(options.config === undefined ? {} : { configFile: options.config }),
        ...(options.port === undefined ? {} : { port: options.port }),
        ...(overrides === undefined ? {} : { overrides }),
        ...(account ? { palaverOptions: { telegramUserNetwork: account.network } } : {}),
      }).catch(async (error: unknown) => {
        await sandbox?.close();
        throw error;
      });
      console.log(`palaver dev: web chat ${dev.url}/  playground ${dev.url}/dev  (${summary(dev.files)})`);
      if (sandbox) console.log(`Telegram sandbox: ${sandbox.url} (the bot answers there as it would on Telegram)`);
      if (account) console.log('  …and the owner\'s Telegram account: choose "To the owner\'s account" on that page');
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
