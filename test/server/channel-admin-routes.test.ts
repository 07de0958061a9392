import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelRoute } from '../../src/domain/ports/channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer, type RunningHttpServer } from '../../src/server/index.js';

// A channel's operator command (the Telegram user account's history sync) is an `admin` route: behind the admin token.

const ADMIN_TOKEN = 'channel-admin-route-token-0123456789';
const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const route = (path: string): ChannelRoute => ({ method: 'POST', path, access: 'admin', handle: () => Response.json({ done: true }) });

describe('a channel route of access admin', () => {
  it('answers only the admin token', async () => {
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route('/admin/shop/sync')], adminToken: ADMIN_TOKEN });
    const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    servers.push(server);
    const post = (headers: Record<string, string>) => fetch(`${server.url}/admin/shop/sync`, { method: 'POST', headers, body: '{}' });
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: 'Bearer wrong-token-0123456789abcdef' })).status).toBe(401);
    const allowed = await post({ authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ done: true });
  });

  it('is refused at start outside /admin/, where no guard would cover it', () => {
    expect(() => createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: [route('/shop/sync')], adminToken: ADMIN_TOKEN })).toThrow(
      /must live under \/admin\//,
    );
  });
});
