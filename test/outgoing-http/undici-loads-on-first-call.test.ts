// A server that only answers /health (or a Palaver whose model is never called) does not pay for undici at start-up.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { afterAll, describe, expect, it } from 'vitest';
import { createOutgoingHttp } from '../../src/platform/outgoing-http.js';

const requireHere = createRequire(import.meta.url);
const undiciLoaded = (): boolean => Object.keys(requireHere.cache).some((path) => /[\\/]node_modules[\\/]undici[\\/]/.test(path));

let server: Server;
afterAll(() => new Promise<void>((done) => server.close(() => done())));

describe('the outgoing HTTP client', () => {
  it('loads undici with its first call, not when it is made', async () => {
    server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const http = createOutgoingHttp();
    try {
      expect(undiciLoaded()).toBe(false);
      const answer = await http.fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(await answer.json()).toEqual({ ok: true });
      expect(undiciLoaded()).toBe(true);
    } finally {
      await http.close();
    }
  });
});
