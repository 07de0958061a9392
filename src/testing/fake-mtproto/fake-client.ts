import { MemoryStorage, networkMiddlewares, TelegramClient, type ITelegramStorageProvider } from '@mtcute/node';
import type { FakeMtprotoLink } from './link.js';

/**
 * The options that put a real `TelegramClient` on a fake Telegram: mtcute's own basic middlewares (flood waiter,
 * internal errors) first, then the link's, which answers. `apiId`/`apiHash` are placeholders the fake ignores.
 */
export function fakeClientOptions(link: FakeMtprotoLink, options: FakeClientOptions = {}) {
  const storage = link.wrapStorage(options.storage ?? new MemoryStorage());
  return {
    apiId: 1,
    apiHash: 'fake-api-hash',
    storage,
    updates: { catchUp: options.catchUp ?? true },
    transport: link.transport,
    network: {
      middlewares: [...networkMiddlewares.basic({ floodWaiter: { maxWait: options.floodWaitMaxMs ?? 10_000, onBeforeWait: () => {} } }), link.middleware],
    },
    logLevel: options.logLevel ?? 0,
  };
}

/**
 * A real `TelegramClient` on a fake Telegram, receiving its pushed updates; `destroy()` also stops those.
 *
 * @example
 * const client = createFakeClient(fakeMtprotoLink(telegram));
 * await client.connect(); await client.getMe(); await client.startUpdatesLoop();
 */
export function createFakeClient(link: FakeMtprotoLink, options: FakeClientOptions = {}): TelegramClient {
  const client = new TelegramClient(fakeClientOptions(link, options));
  const detach = link.attach(client);
  const destroy = client.destroy.bind(client);
  client.destroy = async () => {
    detach();
    await destroy();
  };
  return client;
}

export interface FakeClientOptions {
  /** Session storage (default: in memory). A `SqliteStorage` keeps pts across restarts, as in production. */
  readonly storage?: ITelegramStorageProvider;
  /** Flood waits up to this long are waited out by mtcute (default 10 000 ms); longer ones throw. */
  readonly floodWaitMaxMs?: number;
  /** mtcute's catch-up on connect (default true). */
  readonly catchUp?: boolean;
  /** mtcute's log level (default 0: silent). */
  readonly logLevel?: number;
}
