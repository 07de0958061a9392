import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { Command, InvalidArgumentError, type Option } from 'commander';
import type { User } from '@mtcute/node';
import { loadConfig, type PalaverConfig } from '../config/index.js';
import { channelsOff } from '../channels/registry.js';
import type { TelegramNetworkOverride } from '../channels/telegram-user/client-factory.js';
import type { LoginPrompts } from '../channels/telegram-user/login.js';
import type { StoredAccount, TelegramSessionFile } from '../channels/telegram-user/session-store.js';
import type { Channel, ChannelContext } from '../domain/ports/channel.js';
import { ChannelError, ConfigError, PalaverError } from '../domain/errors.js';
import type { Store } from '../domain/ports/store.js';

// `palaver telegram login|logout|status|sync`: the Telegram user account's session from the terminal. Each command
// that talks to Telegram holds the session lease while it does (one MTProto session, one process), so none of them
// runs beside a `palaver start` that has the channel, and `start` waits for none of them: it refuses, naming them.
// `sync` is the exception that still works: it asks the running Palaver (its admin API) to sync instead.
// mtcute and the store load only inside the actions, so `palaver --help` stays quick.

interface TelegramCommandOptions {
  readonly config?: string;
}

/** The `telegram` command group, for `main`. */
export function telegramCommand(configOption: () => Option, network?: TelegramNetworkOverride): Command {
  const telegram = new Command('telegram').description('the Telegram user account (MTProto): sign in, sign out, status, history sync');

  telegram
    .command('login')
    .description('sign the account in: phone number, login code and two-step password (or --qr), then say who is signed in')
    .addOption(configOption())
    .option('--qr', 'sign in by scanning a QR code with Telegram on a phone that is signed in')
    .action(async (options: TelegramCommandOptions & { qr?: boolean }) => {
      const setup = await telegramSetup(options, { needCredentials: true, network });
      const existing = setup.session.account();
      if (existing) {
        console.log(`Already signed in as ${describeStored(existing)} (session: ${setup.session.path}).`);
        console.log('To sign in as another account, run palaver telegram logout first.');
        return;
      }
      const { loginInteractively } = await import('../channels/telegram-user/login.js');
      if (options.qr) await loadQrRenderer();
      const user = await withSessionClient(setup, 'sign in', async (client) => {
        const prompts = terminalPrompts(process.stdin, process.stdout);
        try {
          return await loginInteractively(client, prompts, { qr: options.qr === true });
        } finally {
          prompts.close();
        }
      });
      console.log(`Signed in as ${describeUser(user)}.`);
      console.log(`The session is kept owner-only in ${setup.session.path}. Start the agent with: palaver start`);
    });

  telegram
    .command('logout')
    .description('end the session at Telegram and delete the local session file')
    .addOption(configOption())
    .action(async (options: TelegramCommandOptions) => {
      const setup = await telegramSetup(options, { needCredentials: true, network });
      const account = setup.session.account();
      if (!account) {
        const existed = setup.session.exists();
        setup.session.delete();
        console.log(existed ? `Not signed in; removed the unused session file ${setup.session.path}.` : `Not signed in (no session in ${setup.session.path}).`);
        return;
      }
      const { tl } = await import('@mtcute/node');
      await withSessionClient(setup, 'sign out', async (client) => {
        try {
          await client.logOut();
        } catch (error) {
          // Telegram no longer knows the session: it is ended already, only the file is left.
          if (!(tl.RpcError.is(error) && error.code === 401)) {
            throw new ChannelError(
              'logout_failed',
              'telegram-user',
              `Could not end the session at Telegram (${error instanceof Error ? error.message : String(error)}). The session file is kept so you can try again; or delete ${setup.session.path} and end the session in Telegram: Settings → Devices.`,
              { cause: error },
            );
          }
        }
      });
      setup.session.delete();
      console.log(`Signed out ${describeStored(account)}: the session is ended at Telegram and ${setup.session.path} is deleted.`);
    });

  telegram
    .command('status')
    .description('show the signed-in account and which process holds the session (no network when not signed in)')
    .addOption(configOption())
    .option('--offline', 'only what the session file and the database say: do not ask Telegram')
    .action(async (options: TelegramCommandOptions & { offline?: boolean }) => {
      const setup = await telegramSetup(options, { needCredentials: false, network });
      const configured = setup.user.apiId !== undefined;
      console.log(
        `Channel: ${!configured ? 'not configured (set TELEGRAM_API_ID and TELEGRAM_API_HASH)' : setup.user.enabled === false ? 'configured, turned off (enabled: false)' : 'configured'}`,
      );
      console.log(`Session file: ${setup.session.path}`);
      const account = setup.session.account();
      if (!account) {
        console.log('Signed in: no. Sign in with: palaver telegram login');
        return;
      }
      console.log(`Signed in: yes, as ${describeStored(account)}`);
      const { SessionLease, describeLease } = await import('../channels/telegram-user/session-lease.js');
      const holder = await withStore(setup.config, (store) => SessionLease.current(store.channelLeases));
      if (holder) {
        console.log(`Connection: held by ${describeLease(holder)}`);
        return;
      }
      console.log('Connection: no process holds the session (palaver start is not running it)');
      if (options.offline || !configured) return;
      const { tl } = await import('@mtcute/node');
      const me = await withSessionClient(setup, 'check the session', async (client) => {
        try {
          return await client.getMe();
        } catch (error) {
          if (tl.RpcError.is(error) && error.code === 401) return error.text;
          throw error;
        }
      });
      if (typeof me === 'string') {
        console.log(`Telegram: does not accept this session any more (${me}). Run palaver telegram logout, then palaver telegram login.`);
        process.exitCode = 1;
        return;
      }
      console.log(`Telegram: the session works; account ${describeUser(me)}`);
    });

  telegram
    .command('sync')
    .description(
      "store a private chat's messages (both sides) in its conversation without answering: no turn, nothing sent, no cost; while palaver start runs the account, through it",
    )
    .argument('<chat>', 'the person: @username or user id')
    .addOption(configOption())
    .option('--after <id>', 'only messages after this Telegram message id (e.g. the last id of an earlier sync)', parseMessageId)
    .option('--limit <n>', 'at most this many messages, the newest', parseLimit, 1000)
    .option('--url <url>', 'the running Palaver that holds the session (default: server.host and server.port of the config)')
    .action(async (chat: string, options: TelegramCommandOptions & { after?: number; limit: number; url?: string }) => {
      const setup = await telegramSetup(options, { needCredentials: true, network });
      setup.session.requireSignedIn();
      const { SessionLeaseHeldError } = await import('../channels/telegram-user/session-lease.js');
      let synced: { readonly result: SyncOutcome; readonly through?: string };
      try {
        synced = { result: await syncHere(setup, chat, options) };
      } catch (error) {
        // One MTProto session, one process: the process that holds it (a running `palaver start`) syncs instead.
        if (!(error instanceof SessionLeaseHeldError)) throw error;
        synced = await syncThroughRunning(chat, options, error);
      }
      const { result, through } = synced;
      const range = result.firstId === undefined ? '' : ` (message ids ${result.firstId}…${result.lastId})`;
      const who = `${result.user.displayName}${result.user.username ? ` (@${result.user.username})` : ''}, id ${result.user.id}`;
      console.log(
        `Read ${result.fetched} messages of the chat with ${who}${range}; ${result.stored} were new and are stored, ${result.fetched - result.stored} were stored already.`,
      );
      console.log(
        `${through === undefined ? '' : `Synced through the running Palaver at ${through}, which holds the session. `}No turn ran, nothing was sent.`,
      );
    });

  return telegram;
}

/** What a sync read and stored, here or in the running Palaver. */
interface SyncOutcome {
  readonly user: { readonly id: number; readonly displayName: string; readonly username: string | null };
  readonly fetched: number;
  readonly stored: number;
  readonly firstId?: number | undefined;
  readonly lastId?: number | undefined;
}

/** Syncs in this process: takes the session lease, connects, stores through a recorder. */
async function syncHere(setup: TelegramSetup, chat: string, options: { after?: number; limit: number }): Promise<SyncOutcome> {
  const { syncHistory } = await import('../channels/telegram-user/history-sync.js');
  const recorder = await startRecorder(setup.config);
  try {
    return await withSessionClient(setup, 'sync history', (client) =>
      syncHistory(client, chat, (conversation, entries) => recorder.context.record(conversation, entries), {
        limit: options.limit,
        ...(options.after === undefined ? {} : { after: options.after }),
      }),
    );
  } finally {
    await recorder.close();
  }
}

/**
 * Asks the running Palaver that holds the session to sync (its admin API, `POST /admin/telegram-user/sync`), with the
 * admin token of `palaver admin` (PALAVER_ADMIN_TOKEN, else the config's `server.adminToken`).
 * @throws ChannelError `session_in_use`, naming the holder and why asking it failed, when it cannot be asked.
 */
async function syncThroughRunning(
  chat: string,
  options: TelegramCommandOptions & { after?: number; limit: number; url?: string },
  held: import('../channels/telegram-user/session-lease.js').SessionLeaseHeldError,
): Promise<{ readonly result: SyncOutcome; readonly through: string }> {
  const { adminConsoleSettings } = await import('../config/index.js');
  const { AdminClient, AdminApiError } = await import('../admin/admin-client.js');
  const target = adminConsoleSettings({ ...(options.config ? { file: options.config } : {}), ...(options.url ? { url: options.url } : {}) });
  // A long history takes Telegram a while to page through: far more than one admin request usually waits.
  const admin = new AdminClient({ url: target.url, token: target.token, timeoutMs: 300_000 });
  try {
    return { result: await admin.telegramSync({ chat, after: options.after, limit: options.limit }), through: target.url };
  } catch (error) {
    if (!(error instanceof AdminApiError)) throw error;
    // A refusal about the chat itself (not private, unknown) is the answer; anything else leaves the holder to name.
    if (error.kind === 'invalid') throw new ChannelError(error.code, 'telegram-user', error.message, { cause: error });
    throw new ChannelError(
      'session_in_use',
      'telegram-user',
      `${held.message} Asking it to sync instead failed: ${error.message} Give its address with --url and its admin token in PALAVER_ADMIN_TOKEN, or stop it and sync again.`,
      { cause: error },
    );
  }
}

interface TelegramSetup {
  readonly config: PalaverConfig;
  readonly user: PalaverConfig['channels']['telegramUser'];
  readonly session: TelegramSessionFile;
  readonly network: TelegramNetworkOverride | undefined;
}

async function telegramSetup(
  options: TelegramCommandOptions,
  { needCredentials, network }: { readonly needCredentials: boolean; readonly network: TelegramNetworkOverride | undefined },
): Promise<TelegramSetup> {
  const { config } = loadConfig(options.config ? { file: options.config } : {});
  const user = config.channels.telegramUser;
  if (needCredentials && (user.apiId === undefined || user.apiHash === undefined)) {
    throw new ConfigError(
      'The Telegram user account needs an api_id and api_hash: get them at my.telegram.org ("API development tools"), then set TELEGRAM_API_ID and TELEGRAM_API_HASH (or channels.telegramUser.apiId / apiHash).',
      [{ path: 'channels.telegramUser.apiId', message: 'missing' }],
    );
  }
  const { TelegramSessionFile } = await import('../channels/telegram-user/session-store.js');
  // resolveConfigPaths always sets it; the schema keeps it optional for configs that do not say.
  const session = new TelegramSessionFile(user.sessionFile!);
  return { config, user, session, network };
}

async function withStore<T>(config: PalaverConfig, fn: (store: Store) => Promise<T>): Promise<T> {
  const { openStore } = await import('../store/open-store.js');
  const store = await openStore(config.database.url);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * Runs `fn` with a connected client on the session, holding the session lease meanwhile.
 * @throws SessionLeaseHeldError when another process (a running `palaver start`) holds the session.
 * @throws ChannelError `telegram_unreachable` when Telegram does not answer within seconds (no network, blocked).
 */
async function withSessionClient<T>(setup: TelegramSetup, doing: string, fn: (client: import('@mtcute/node').TelegramClient) => Promise<T>): Promise<T> {
  const { SessionLease } = await import('../channels/telegram-user/session-lease.js');
  const { createTelegramUserClient } = await import('../channels/telegram-user/client-factory.js');
  const { ensureTelegramReachable } = await import('../channels/telegram-user/reachability.js');
  return withStore(setup.config, async (store) => {
    const lease = await SessionLease.acquire({ leases: store.channelLeases, doing });
    const built = createTelegramUserClient({
      apiId: setup.user.apiId!,
      apiHash: setup.user.apiHash!,
      session: await setup.session.openStorage(),
      floodWaitInlineMaxMs: setup.user.floodWaitInlineMaxSeconds * 1000,
      ...(setup.network ? { network: setup.network } : {}),
      // mtcute's own lines would mix with the prompts; its errors reach the user through ours.
      logLevel: 0,
      // The running channel's update state stays where it is: what arrived meanwhile is still news to it.
      updates: false,
    });
    try {
      await built.client.connect();
      // mtcute waits for a connection forever: without one, say so before asking for a phone number.
      await ensureTelegramReachable(built.client);
      return await fn(built.client);
    } finally {
      await built.destroy();
      await lease.release();
    }
  });
}

/**
 * A Palaver with no channel of its own but a stand-in named like the user-account channel, so that history is stored
 * through the same `ChannelContext.record` the running channel uses (identity, the conversation, dedupe). It serves
 * no inbox: no turn runs here.
 */
async function startRecorder(config: PalaverConfig): Promise<{ readonly context: ChannelContext; close(): Promise<void> }> {
  const { createPalaver } = await import('../app.js');
  const { createLogger } = await import('../observability/logger.js');
  const recorder = new HistoryRecorder();
  const palaver = await createPalaver(
    {
      ...config,
      channels: channelsOff(config.channels),
      mcp: { ...config.mcp, servers: [] },
    },
    {
      channels: [recorder],
      serveInbox: false,
      logger: createLogger({ level: config.log.level === 'info' ? 'warn' : config.log.level, format: config.log.format, destination: process.stderr }),
    },
  );
  return { context: recorder.context, close: () => palaver.close() };
}

/** The stand-in channel of `sync`: it only hands out its context; it never sends. */
class HistoryRecorder implements Channel {
  readonly name = 'telegram-user';
  readonly accountNamespace = 'telegram';
  readonly capabilities = { maxMessageChars: 4096, streaming: false, typing: false, reactions: false, readReceipts: false };
  #context: ChannelContext | undefined;

  get context(): ChannelContext {
    if (!this.#context) throw new PalaverError('not_started', 'The history recorder has not started.');
    return this.#context;
  }

  async start(context: ChannelContext): Promise<void> {
    this.#context = context;
  }

  async stop(): Promise<void> {}

  async send(): Promise<never> {
    throw new ChannelError('unsupported', this.name, 'palaver telegram sync sends nothing');
  }
}

/**
 * Prompts on the terminal, answered line by line (also from a pipe: lines typed ahead wait their turn). The password
 * is not echoed on a terminal.
 */
function terminalPrompts(input: NodeJS.ReadableStream & { isTTY?: boolean }, output: NodeJS.WritableStream): LoginPrompts & { close(): void } {
  const tty = input.isTTY === true;
  let muted = false;
  const echo = new Writable({
    write(chunk, encoding, callback) {
      if (!muted) output.write(chunk, encoding);
      callback();
    },
  });
  const reader = createInterface({ input, output: echo, terminal: tty });
  const lines = reader[Symbol.asyncIterator]();
  const ask = async (question: string, secret = false): Promise<string> => {
    output.write(question);
    muted = secret && tty;
    const next = await lines.next();
    if (muted) output.write('\n');
    muted = false;
    if (next.done) throw new ChannelError('login_failed', 'telegram-user', 'Login cancelled: the input ended before an answer.');
    return String(next.value).trim();
  };
  return {
    phone: () => ask('Phone number of the account (international, e.g. +44 20 7946 0958): '),
    code: (_via, retry) => ask(retry ? 'Login code, again: ' : 'Login code: '),
    password: (hint, retry) =>
      ask(`${retry ? 'Two-step verification password, again' : 'Two-step verification password'}${hint ? ` (hint: ${hint})` : ''}: `, true),
    qr(url, expires) {
      output.write(`\nScan this code in Telegram on your phone: Settings → Devices → Link Desktop Device (valid until ${expires.toISOString()}).\n`);
      output.write(`${qrText(url)}\n${url}\n`);
    },
    notice: (text) => void output.write(`${text}\n`),
    close: () => reader.close(),
  };
}

/** The QR code as Unicode half blocks, two rows of modules per line. */
let renderQr: ((url: string) => string) | undefined;
function qrText(url: string): string {
  return renderQr ? renderQr(url) : '(loading the QR renderer failed; open the link below on a signed-in device instead)';
}

/** Loaded before a QR login so that drawing stays synchronous inside mtcute's callback. */
async function loadQrRenderer(): Promise<void> {
  const { renderUnicodeCompact } = await import('uqr');
  renderQr = (url) => renderUnicodeCompact(url, { border: 2 });
}

function describeUser(user: User): string {
  const username = user.username ? `@${user.username}, ` : '';
  return `${user.displayName} (${username}id ${user.id})`;
}

function describeStored(account: StoredAccount): string {
  const username = account.usernames[0] ? `@${account.usernames[0]}, ` : '';
  return `${username}id ${account.userId}`;
}

function parseMessageId(value: string): number {
  const id = Number(value);
  if (!Number.isSafeInteger(id) || id < 0) throw new InvalidArgumentError('a Telegram message id (a whole number)');
  return id;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) throw new InvalidArgumentError('a whole number from 1 to 100000');
  return limit;
}
