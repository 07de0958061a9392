import { randomBytes } from 'node:crypto';
import { FakeConnection } from '@fuman/net';
import { IntermediatePacketCodec, type ITelegramStorageProvider, type RpcCallMiddleware, type TelegramClient, type TelegramTransport } from '@mtcute/node';
import type { FakeMtproto } from './fake-mtproto.js';

/**
 * What a real `TelegramClient` needs to talk to a fake Telegram instead of Telegram's data centres: the last network
 * middleware (it answers every RPC and never reaches the socket), a transport whose connections go nowhere (so no
 * byte leaves the process; a drop closes them), a storage wrapper that makes the client believe it holds an auth key
 * (so it never runs a key exchange), and `attach`, which delivers the fake's pushed updates to the client.
 */
export interface FakeMtprotoLink {
  readonly middleware: RpcCallMiddleware;
  readonly transport: TelegramTransport;
  /** Makes `storage` answer every auth key lookup with a key, as a signed-in session's would. Returns it. */
  wrapStorage<S extends ITelegramStorageProvider>(storage: S): S;
  /** Starts delivering pushed updates (and drops) to `client`; returns the way to stop. */
  attach(client: TelegramClient): () => void;
}

/** The link for a client in the same process as `fake`. */
export function fakeMtprotoLink(fake: FakeMtproto): FakeMtprotoLink {
  const connections = new Set<FakeConnection<unknown>>();
  return {
    middleware: async (ctx) => fake.handle(ctx.request),
    transport: fakeTransport(connections, () => fake.whenOnline()),
    wrapStorage,
    attach(client) {
      return fake.subscribe({
        updates: (updates) => client.onServerUpdate.emit(updates),
        drop: () => closeAll(connections),
      });
    },
  };
}

/** Connections that carry nothing; `connect` waits while the (fake) network is down. */
export function fakeTransport(connections: Set<FakeConnection<unknown>>, whenOnline: () => Promise<void>): FakeMtprotoLink['transport'] {
  return {
    async connect(dc) {
      await whenOnline();
      const connection = new FakeConnection<unknown>(dc);
      connections.add(connection);
      // FakeConnection has the IConnection shape mtcute's TCP connection has (read, write, close, addresses).
      return connection as unknown as Awaited<ReturnType<TelegramTransport['connect']>>;
    },
    packetCodec: () => new IntermediatePacketCodec(),
  };
}

export function closeAll(connections: Set<FakeConnection<unknown>>): void {
  for (const connection of connections) connection.close();
  connections.clear();
}

const AUTH_KEY = new Uint8Array(256);

export function wrapStorage<S extends ITelegramStorageProvider>(storage: S): S {
  // mtcute asks storage for the DC's auth key before each connection: with one there, it goes straight to RPCs.
  // A DC without one gets a random key stored, as a real key exchange leaves one: a session file then looks like a
  // real one (a key and, after login, a user), and tests can look for the key's bytes in output that must not hold it.
  const keys = storage.authKeys;
  const storedKey = keys.get.bind(keys);
  const storeKey = keys.set.bind(keys);
  keys.get = async (dc) => {
    const key = await storedKey(dc);
    if (key) return key;
    const fresh = new Uint8Array(randomBytes(256));
    await storeKey(dc, fresh);
    return fresh;
  };
  keys.getTemp = () => AUTH_KEY;
  return storage;
}
