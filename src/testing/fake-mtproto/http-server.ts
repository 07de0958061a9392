import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { tl } from '@mtcute/node';
import type { FakeMtproto } from './fake-mtproto.js';
import { decodeTl, encodeTl } from './wire.js';

/**
 * Serves `fake` on loopback for spawned processes (`remoteFakeMtprotoLink(url)` on their side):
 * - `POST /rpc` (a TL request) → the TL answer;
 * - `GET /events?after=N` long-polls what the fake pushed after event N (updates, drops): `{ next, events }`;
 * - `GET /online` answers once the fake's network is up (a child's transport connects only then).
 * Events are kept from the moment the server starts; a child starting later asks `after=-1` for the current position.
 */
export async function serveFakeMtproto(fake: FakeMtproto): Promise<FakeMtprotoServer> {
  const events: PushedEvent[] = [];
  const waiting = new Set<() => void>();
  const unsubscribe = fake.subscribe({
    updates: (updates) => append({ kind: 'updates', updates }),
    drop: () => append({ kind: 'drop' }),
  });
  function append(event: PushedEvent): void {
    events.push(event);
    for (const wake of [...waiting]) wake();
  }

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method === 'POST' && url.pathname === '/rpc') {
      const request = decodeTl(await readBody(req)) as tl.RpcMethod;
      return reply(res, encodeTl(await fake.handle(request)));
    }
    if (req.method === 'GET' && url.pathname === '/online') {
      await fake.whenOnline();
      return reply(res, '{}');
    }
    if (req.method === 'GET' && url.pathname === '/events') {
      const after = Number(url.searchParams.get('after') ?? '-1');
      if (after < 0) return reply(res, JSON.stringify({ next: events.length, events: [] }));
      if (events.length <= after) await waitForEvent(req, 25_000);
      return reply(res, encodeTl({ next: events.length, events: events.slice(after) }));
    }
    res.writeHead(404).end();
  }

  function waitForEvent(req: IncomingMessage, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      waiting.add(done);
      req.once('close', done);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      unsubscribe();
      for (const wake of [...waiting]) wake();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface FakeMtprotoServer {
  /** `http://127.0.0.1:PORT`: the child reaches it through `remoteFakeMtprotoLink(url)`. */
  readonly url: string;
  /** Stops serving; pending polls end. Safe to call twice. */
  close(): Promise<void>;
}

export type PushedEvent = { readonly kind: 'updates'; readonly updates: tl.TypeUpdates } | { readonly kind: 'drop' };

function reply(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
