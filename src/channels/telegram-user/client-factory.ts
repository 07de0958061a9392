import { networkMiddlewares, TelegramClient, type ITelegramStorageProvider, type RpcCallMiddleware, type TelegramTransport } from '@mtcute/node';
import type { BaseSqliteStorage } from '@mtcute/core';
import { sessionStorage } from './session-storage.js';
import { TelegramSessionFile } from './session-store.js';

/** The 401 answers after which the session is gone for good: only a new `palaver telegram login` helps. */
export const SIGNED_OUT_ERRORS: ReadonlySet<string> = new Set([
  'AUTH_KEY_UNREGISTERED',
  'AUTH_KEY_INVALID',
  'SESSION_REVOKED',
  'SESSION_EXPIRED',
  'USER_DEACTIVATED',
  'USER_DEACTIVATED_BAN',
]);

/**
 * Replaces the way to Telegram's data centres, given by the code that starts Palaver (`PalaverOptions`, the CLI's
 * `main`): tests give the fake MTProto server's link (`src/testing/fake-mtproto`), which has this shape. Its
 * middleware answers every call; its transport carries nothing.
 */
export interface TelegramNetworkOverride {
  readonly middleware: RpcCallMiddleware;
  readonly transport: TelegramTransport;
  wrapStorage<S extends ITelegramStorageProvider>(storage: S): S;
  attach(client: TelegramClient): () => void;
}

export interface TelegramUserClientOptions {
  readonly apiId: number;
  readonly apiHash: string;
  /** The session's SQLite file (created owner-only if absent), or a storage (tests). */
  readonly session: string | ITelegramStorageProvider;
  /** Flood waits up to this many ms are waited out by mtcute's flood waiter; longer ones are thrown. Default 10 000. */
  readonly floodWaitInlineMaxMs?: number;
  /** Called (once per client) with the error text when Telegram says the session is gone (see SIGNED_OUT_ERRORS). */
  readonly onSignedOut?: (error: string) => void;
  /** Called with each flood wait mtcute is about to wait out inline, in seconds. */
  readonly onFloodWait?: (method: string, seconds: number) => void;
  /** Tests: the fake server instead of Telegram. */
  readonly network?: TelegramNetworkOverride;
  /** mtcute's own log level (0 silent … 5 verbose). Default 1 (errors). */
  readonly logLevel?: number;
  /**
   * Default true. False (the `palaver telegram` commands): no updates manager, so the client never fetches the
   * difference and never moves the session's update state past messages the channel has not stored yet.
   */
  readonly updates?: boolean;
}

/** A client and how to dispose of it for good (a client is never reused after `disconnect`). */
export interface BuiltClient {
  readonly client: TelegramClient;
  destroy(): Promise<void>;
}

/**
 * Builds the mtcute client of the user-account channel: the SQLite session, catch-up on, mtcute's flood waiter with
 * Palaver's inline limit, and a middleware that notices a revoked session on any call (a send, a catch-up, mtcute's
 * own), since mtcute itself only stops its updates loop then.
 */
export function createTelegramUserClient(options: TelegramUserClientOptions): BuiltClient {
  let storage: ITelegramStorageProvider = typeof options.session === 'string' ? sqliteStorage(options.session) : options.session;
  if (options.network) storage = options.network.wrapStorage(storage);
  let signedOut = false;
  const watchSignOut: RpcCallMiddleware = async (ctx, next) => {
    const result = await next(ctx);
    if (isRpcError(result) && result.errorCode === 401 && SIGNED_OUT_ERRORS.has(result.errorMessage) && !signedOut) {
      signedOut = true;
      options.onSignedOut?.(result.errorMessage);
    }
    return result;
  };
  const middlewares: RpcCallMiddleware[] = [
    watchSignOut,
    ...networkMiddlewares.basic({
      floodWaiter: {
        maxWait: options.floodWaitInlineMaxMs ?? 10_000,
        onBeforeWait: (ctx, seconds) => options.onFloodWait?.(ctx.request._, seconds),
      },
    }),
    ...(options.network ? [options.network.middleware] : []),
  ];
  const client = new TelegramClient({
    apiId: options.apiId,
    apiHash: options.apiHash,
    storage,
    updates: options.updates === false ? false : { catchUp: true },
    network: { middlewares },
    ...(options.network ? { transport: options.network.transport } : {}),
    logLevel: options.logLevel ?? 1,
  });
  const detach = options.network?.attach(client);
  let destroyed: Promise<void> | undefined;
  return {
    client,
    destroy() {
      destroyed ??= (async () => {
        detach?.();
        await client.destroy();
      })();
      return destroyed;
    },
  };
}

function sqliteStorage(file: string): BaseSqliteStorage {
  // The session file holds the account's auth key: owner-only before SQLite opens (and keeps) it.
  new TelegramSessionFile(file).ensure();
  return sessionStorage(file);
}

function isRpcError(value: unknown): value is { _: 'mt_rpc_error'; errorCode: number; errorMessage: string } {
  return typeof value === 'object' && value !== null && (value as { _?: unknown })._ === 'mt_rpc_error';
}
