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
}

export interface RunningHttpServer {
  /** Base URL with the real port, e.g. `http://127.0.0.1:39123`. A wildcard host is shown as loopback. */
  readonly url: string;
  /** Stops listening and closes open connections, SSE streams included. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Serves a Hono app with @hono/node-server. Resolves once listening; rejects with `http_listen_failed` when the
 * port cannot be bound.
 */
export function startHttpServer(app: Hono, options: HttpServerOptions): Promise<RunningHttpServer> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: options.host, port: options.port }) as Server;
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new PalaverError('http_listen_failed', `Cannot listen on ${options.host}:${options.port} (${error.code ?? error.message}); is another process using the port? Set server.port.`, { cause: error }),
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
