import type { FakeConnection } from '@fuman/net';
import type { TelegramClient } from '@mtcute/node';
import type { PushedEvent } from './http-server.js';
import { closeAll, fakeTransport, wrapStorage, type FakeMtprotoLink } from './link.js';
import { decodeTl, encodeTl } from './wire.js';

/**
 * The link for a client in a spawned process: RPCs go to the test's fake over loopback HTTP (`serveFakeMtproto`),
 * and pushed updates come back by long polling. The child gets it injected (`test/cli/palaver-on-fake-telegram.ts`).
 */
export function remoteFakeMtprotoLink(url: string): FakeMtprotoLink {
  const base = url.replace(/\/+$/, '');
  const connections = new Set<FakeConnection<unknown>>();
  return {
    async middleware(ctx) {
      const response = await fetch(`${base}/rpc`, { method: 'POST', body: encodeTl(ctx.request), headers: { 'content-type': 'application/json' } });
      if (!response.ok) throw new Error(`fake MTProto server answered ${response.status}: ${await response.text()}`);
      return decodeTl(await response.text());
    },
    transport: fakeTransport(connections, async () => {
      await fetch(`${base}/online`);
    }),
    wrapStorage,
    attach(client: TelegramClient) {
      const stop = new AbortController();
      void pollEvents(base, stop.signal, (event) => {
        if (event.kind === 'updates') client.onServerUpdate.emit(event.updates);
        else closeAll(connections);
      });
      return () => stop.abort();
    },
  };
}

async function pollEvents(base: string, signal: AbortSignal, deliver: (event: PushedEvent) => void): Promise<void> {
  let after = -1;
  while (!signal.aborted) {
    try {
      const response = await fetch(`${base}/events?after=${after}`, { signal });
      const body = decodeTl(await response.text()) as { next: number; events: PushedEvent[] };
      for (const event of body.events) deliver(event);
      after = body.next;
    } catch {
      if (signal.aborted) return;
      // The test's server went away or restarts: wait a moment, then ask again (missed updates come by catch-up).
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
