import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelRoute } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';
import { halfBody } from '../security/attack-kit.js';

const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('request timeouts of the HTTP server', () => {
  it('drops a request whose body never arrives whole, even when the route would wait for it forever', async () => {
    // A route without a deadline of its own: only the server's requestTimeout protects it.
    const route: ChannelRoute = { method: 'POST', path: '/slow', access: 'public', handle: async (request) => new Response(await request.text()) };
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route] });
    const server = await startHttpServer(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 600, headersTimeoutMs: 300 });
    servers.push(server);
    const result = await halfBody(server.url, '/slow', 1000, '{"half":');
    expect(result.statusLine).toBe('HTTP/1.1 408 Request Timeout');
    expect(result.closedAfterMs).toBeLessThan(3000);
  });

  it('still streams a response for longer than the request timeout once the request arrived', async () => {
    const route: ChannelRoute = {
      method: 'GET',
      path: '/stream',
      access: 'public',
      handle: () => {
        let n = 0;
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            await new Promise((resolve) => setTimeout(resolve, 200));
            controller.enqueue(new TextEncoder().encode(`${n}\n`));
            if (++n === 5) controller.close();
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/plain' } });
      },
    };
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route] });
    const server = await startHttpServer(app, { host: '127.0.0.1', port: 0, requestTimeoutMs: 400, headersTimeoutMs: 300 });
    servers.push(server);
    expect(await (await fetch(`${server.url}/stream`)).text()).toBe('0\n1\n2\n3\n4\n');
  });
});
