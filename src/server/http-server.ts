import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { PalaverError } from '../domain/errors.js';

export interface HttpServerOptions {
  /** Interface to bind; `127.0.0.1` keeps the server local. */
  readonly host: string;
  /** Port to listen on; 0 picks a free one (see `url`). */
  readonly port: number;
  /**
   * Time a client has to send a whole request, headers and body (Node's `requestTimeout`); then 408 and the
   * connection is closed. Streamed responses are not limited by it. Default 30 000 ms.
   */
  readonly requestTimeoutMs?: number;
  /** Time a client has to send the request headers (Node's `headersTimeout`). Default 10 000 ms. */
  readonly headersTimeoutMs?: number;
}

export interface RunningHttpServer {
  /** Base URL with the real port, e.g. `http://127.0.0.1:39123`. A wildcard host is shown as loopback. */
  readonly url: string;
  /** Stops listening and closes open connections, SSE streams included. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Serves a Hono app with @hono/node-server. Resolves once listening; rejects with `http_listen_failed` when the
 * port cannot be bound. Requests must arrive whole within `requestTimeoutMs` (headers within `headersTimeoutMs`).
 */
export function startHttpServer(app: Hono, options: HttpServerOptions): Promise<RunningHttpServer> {
  return new Promise((resolve, reject) => {
    const requestTimeout = options.requestTimeoutMs ?? 30_000;
    const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout);
    const server = serve({
      fetch: app.fetch,
      hostname: options.host,
      port: options.port,
      // A half-sent request must not hold a connection for minutes (Node's defaults: 300 s, checked every 30 s).
      serverOptions: { requestTimeout, headersTimeout, connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 2))) },
    }) as Server;
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new PalaverError(
          'http_listen_failed',
          `Cannot listen on ${options.host}:${options.port} (${error.code ?? error.message}); is another process using the port? Set server.port.`,
          { cause: error },
        ),
      );
    });
    server.once('listening', () => {
      const { port } = server.address() as AddressInfo;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://${displayHost(options.host)}:${port}`,
        close: () => {
          closing ??= new Promise<void>((done) => {
            server.close(() => done());
            // Streams in progress would hold close() open until their turns end.
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}

function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
