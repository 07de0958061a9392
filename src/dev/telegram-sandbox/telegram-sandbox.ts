import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { startFakeTelegram, type FakeTelegram, type FakeUser } from '../../testing/fake-telegram/index.js';
import { SANDBOX_CSS, SANDBOX_HTML, SANDBOX_JS } from './page.js';
import { Timeline } from './timeline.js';
import { startSandboxUserAccount, type RunningUserAccount, type SandboxUserAccount } from './user-account.js';

/** Someone who writes to the bot from the sandbox page, in a private chat whose id is theirs (as in Telegram). */
export interface SandboxPerson {
  readonly id: number;
  readonly first_name: string;
  readonly username?: string;
  readonly language_code?: string;
}

export interface TelegramSandboxOptions {
  /** Port of the page (loopback only). Default 0: any free port. */
  readonly port?: number;
  /** Port of the fake Bot API. Default 0: any free port. */
  readonly apiPort?: number;
  /** Who can write, chosen on the page. Default: Ada (English) and Boris (Russian). */
  readonly people?: readonly SandboxPerson[];
  /** The bot's username (getMe). Default `palaver_sandbox_bot`. */
  readonly botUsername?: string;
  /**
   * Also the owner's side of a Telegram user account (`channels.telegramUser`): a fake Telegram at the MTProto level
   * with a session signed in for the owner, and on the page a view where one writes to the account as these people,
   * or as the owner from their phone. Default false. `ownerTakeoverMinutes` (e.g. read from the running config) lets
   * the page say until when the agent steps back after the owner wrote.
   */
  readonly userAccount?: boolean | { readonly ownerTakeoverMinutes?: () => number | undefined };
}

export interface TelegramSandbox {
  /** The bot token the fake accepts: `channels.telegram.token`. Not a real token; it works nowhere else. */
  readonly token: string;
  /** `http://127.0.0.1:PORT` of the fake Bot API: `channels.telegram.apiRoot`. */
  readonly apiRoot: string;
  /** The page where a person writes as a Telegram user and sees what the bot sends: `http://127.0.0.1:PORT/`. */
  readonly url: string;
  /** The fake Bot API itself, the one the tests use (every call the bot made, what it sent). */
  readonly telegram: FakeTelegram;
  /** Everything that happened in the sandbox's chats, oldest first. */
  readonly events: Timeline['events'];
  /** The user-account side, when started with `userAccount`: point `channels.telegramUser` and `telegramUserNetwork` at it. */
  readonly userAccount?: SandboxUserAccount;
  /** Stops the page and the fake Bot API. Safe to call twice. */
  close(): Promise<void>;
}

const DEFAULT_PEOPLE: readonly SandboxPerson[] = [
  { id: 700_001, first_name: 'Ada', username: 'ada_sandbox', language_code: 'en' },
  { id: 700_002, first_name: 'Boris', username: 'boris_sandbox', language_code: 'ru' },
];

const sendBody = z.strictObject({ chatId: z.number().int(), text: z.string().min(1).max(4096) });
const accountBody = z.strictObject({ chatId: z.number().int(), text: z.string().min(1).max(4096), asOwner: z.boolean() });
const pressBody = z.strictObject({ chatId: z.number().int(), messageId: z.number().int(), data: z.string().max(64) });

/**
 * Telegram without Telegram: starts the fake Bot API the tests use (src/testing/fake-telegram) and a page beside it,
 * both on loopback. On the page one writes as a Telegram user in a private chat with the bot and sees what the bot
 * sends, as a Telegram app would show it: text formatted from its entities (never the bot's text as HTML), typing,
 * drafts, reactions, inline keyboards (a press sends the callback_query), several messages in order. The page follows
 * along through server-sent events. `palaver dev --telegram` starts it; from code, point `channels.telegram` at it.
 * With `userAccount`, the page also has the owner's Telegram user account (see {@link TelegramSandboxOptions.userAccount}).
 *
 * @example
 * const sandbox = await startTelegramSandbox();
 * const palaver = await createPalaver({ ...config, channels: { telegram: { token: sandbox.token, apiRoot: sandbox.apiRoot } } });
 * console.log(`Write to the bot at ${sandbox.url}`);
 */
export async function startTelegramSandbox(options: TelegramSandboxOptions = {}): Promise<TelegramSandbox> {
  const people = options.people ?? DEFAULT_PEOPLE;
  if (people.length === 0) throw new Error('startTelegramSandbox: give at least one person in `people`.');
  const telegram = await startFakeTelegram({
    botUsername: options.botUsername ?? 'palaver_sandbox_bot',
    ...(options.apiPort ? { port: options.apiPort } : {}),
  });
  const timeline = new Timeline(telegram);
  timeline.watch();
  const streams = new Set<ServerResponse>();
  let account: RunningUserAccount | undefined;
  if (options.userAccount) {
    const minutes = typeof options.userAccount === 'object' ? options.userAccount.ownerTakeoverMinutes : undefined;
    try {
      account = await startSandboxUserAccount(people, timeline, minutes ?? (() => undefined));
    } catch (error) {
      timeline.stop();
      await telegram.close();
      throw error;
    }
  }

  const personOf = (chatId: number): FakeUser | undefined => people.find((person) => person.id === chatId);

  async function handle(req: IncomingMessage, res: ServerResponse, port: number): Promise<void> {
    // Loopback only, and only under its own name: another site's page reached through DNS rebinding is refused.
    if (!isOwnHost(req.headers.host, port)) return text(res, 421, 'Misdirected request');
    const path = new URL(req.url ?? '/', 'http://sandbox').pathname;
    if (req.method === 'GET' && path === '/') return asset(res, 'text/html; charset=utf-8', SANDBOX_HTML);
    if (req.method === 'GET' && path === '/sandbox.js') return asset(res, 'text/javascript; charset=utf-8', SANDBOX_JS);
    if (req.method === 'GET' && path === '/sandbox.css') return asset(res, 'text/css; charset=utf-8', SANDBOX_CSS);
    if (req.method === 'GET' && path === '/api/info')
      return json(res, 200, { bot: telegram.bot, people, account: account ? { owner: { first_name: account.telegram.self.firstName } } : null });
    if (req.method === 'GET' && path === '/api/events') return stream(req, res);
    if (req.method === 'POST' && (path === '/api/messages' || path === '/api/presses' || path === '/api/account/messages')) {
      // A JSON body only: a cross-site form cannot send one without a preflight this server never allows.
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return text(res, 415, 'Send JSON');
      const raw = await readJson(req);
      if (path === '/api/account/messages') {
        const body = accountBody.safeParse(raw);
        const to = body.success ? personOf(body.data.chatId) : undefined;
        if (!account || !body.success || !to)
          return json(res, 400, { error: 'the account side on, chatId of a sandbox person, a text of 1 to 4096 characters and asOwner' });
        return json(res, 200, { messageId: account.write(to.id, body.data.text, body.data.asOwner) });
      }
      if (path === '/api/messages') {
        const body = sendBody.safeParse(raw);
        const from = body.success ? personOf(body.data.chatId) : undefined;
        if (!body.success || !from) return json(res, 400, { error: 'chatId of a sandbox person and a text of 1 to 4096 characters' });
        const update = telegram.sendText({ chatId: from.id, from, text: body.data.text });
        const messageId = (update['message'] as { message_id: number }).message_id;
        timeline.add({ kind: 'person', chatId: from.id, at: Date.now(), messageId, text: body.data.text, from: from.first_name });
        return json(res, 200, { messageId });
      }
      const body = pressBody.safeParse(raw);
      const from = body.success ? personOf(body.data.chatId) : undefined;
      const message = body.success ? telegram.sent.find((sent) => sent.chatId === body.data.chatId && sent.messageId === body.data.messageId) : undefined;
      if (!body.success || !from || !message) return json(res, 400, { error: 'a button of a message the bot sent to a sandbox person' });
      telegram.enqueue({
        callback_query: {
          id: `sandbox-${Date.now()}-${timeline.events.length}`,
          from: { is_bot: false, ...from },
          chat_instance: String(from.id),
          data: body.data.data,
          message: {
            message_id: message.messageId,
            date: Math.floor(message.at / 1000),
            chat: { id: from.id, type: 'private', first_name: from.first_name },
            from: telegram.bot,
            text: message.text,
          },
        },
      });
      timeline.add({ kind: 'press', chatId: from.id, at: Date.now(), messageId: message.messageId, data: body.data.data });
      return json(res, 200, {});
    }
    return text(res, 404, 'Not found');
  }

  /** Server-sent events: every event after `Last-Event-ID` (all on a first visit), then each new one as it happens. */
  function stream(req: IncomingMessage, res: ServerResponse): void {
    const after = Number(req.headers['last-event-id'] ?? 0) || 0;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    // A comment first: Node holds the headers back until the first byte, and the page waits for the stream to open.
    res.write(': sandbox\n\n');
    const write = (event: { seq: number }) => res.write(`id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`);
    for (const event of timeline.events.slice(after)) write(event);
    const unsubscribe = timeline.subscribe(write);
    streams.add(res);
    res.on('close', () => {
      unsubscribe();
      streams.delete(res);
    });
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});
    handle(req, res, (server.address() as AddressInfo).port).catch(() => text(res, 500, 'Sandbox error'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    token: telegram.token,
    apiRoot: telegram.apiRoot,
    url: `http://127.0.0.1:${port}/`,
    telegram,
    events: timeline.events,
    ...(account ? { userAccount: { telegram: account.telegram, network: account.network, settings: account.settings } } : {}),
    close() {
      closing ??= (async () => {
        timeline.stop();
        for (const res of streams) res.end();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await telegram.close();
        account?.close();
      })();
      return closing;
    },
  };
}

function isOwnHost(host: string | undefined, port: number): boolean {
  return host === `127.0.0.1:${port}` || host === `localhost:${port}`;
}

/** The page's own files: nothing from elsewhere runs or loads on it. */
function asset(res: ServerResponse, type: string, body: string): void {
  res.writeHead(200, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
    'referrer-policy': 'no-referrer',
  });
  res.end(body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function text(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

/** The request's JSON body (at most 64 KiB); undefined when it is not JSON. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 65_536) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
