// Which wire a call takes decides what a process holds: undici's pool and parser cost 14–20 MB resident, so a
// process that only makes plain calls on direct connections (a bot, a model endpoint) must never load it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpTransport } from '../../src/http-client/http-transport.js';

const requireHere = createRequire(import.meta.url);
const undiciLoaded = (): boolean => Object.keys(requireHere.cache).some((path) => /[\\/]node_modules[\\/]undici[\\/]/.test(path));

let server: Server;
afterAll(() => new Promise<void>((done) => server.close(() => done())));

async function echoServer(): Promise<string> {
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ got: body })));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe('the HTTP transport picks its wire', () => {
  it('answers JSON calls on a direct connection without loading undici, and loads it for a stream body', async () => {
    const url = await echoServer();
    const transport = createHttpTransport();
    try {
      expect(undiciLoaded()).toBe(false);
      const answer = await transport.fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"hello":1}' });
      expect(await answer.json()).toEqual({ got: '{"hello":1}' });
      const bytes = await transport.fetch(url, { method: 'POST', body: new TextEncoder().encode('raw') });
      expect(await bytes.json()).toEqual({ got: 'raw' });
      expect(undiciLoaded()).toBe(false);

      const streamed = await transport.fetch(url, { method: 'POST', body: Readable.toWeb(Readable.from(['up', 'load'])) as ReadableStream, duplex: 'half' } as RequestInit);
      expect(await streamed.json()).toEqual({ got: 'upload' });
      expect(undiciLoaded()).toBe(true);
    } finally {
      await transport.close();
    }
  });
});
