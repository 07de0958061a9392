import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelScript } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

let harness: Harness | undefined;
const servers: Server[] = [];
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A gateway that refuses every key and echoes it back in the 401 body, as some do. */
const echoTheKey: ModelScript = (call) => ({
  error: { status: 401, message: `Incorrect API key provided: ${(call.headers['authorization'] ?? '').replace(/^Bearer\s+/i, '')}`, code: 'invalid_api_key' },
});

describe('secrets in the log of a real turn', () => {
  it('a 401 echoing the model API key: the turn apologises, the failure is logged usefully, no line holds the key', async () => {
    harness = await createHarness(echoTheKey);
    const palaver = await harness.start({
      model: { apiKey: TEST_SECRETS.modelApiKey, fallback: { name: 'scripted-fallback', apiKey: TEST_SECRETS.fallbackApiKey } },
    });

    const reply = await palaver.chat({ userId: 'alice', text: 'Hello?' });

    expect(reply.status).toBe('failed');
    // The gateway really did echo both keys: the leak is provoked, not avoided.
    expect(harness.model.calls.map((call) => call.headers['authorization'])).toEqual(
      expect.arrayContaining([`Bearer ${TEST_SECRETS.modelApiKey}`, `Bearer ${TEST_SECRETS.fallbackApiKey}`]),
    );
    const text = harness.logText();
    expect(text).not.toContain(TEST_SECRETS.modelApiKey);
    expect(text).not.toContain(TEST_SECRETS.fallbackApiKey);
    expect(text).toContain('[redacted]');

    const failure = harness.logs.find((line) => line['msg'] === 'model call failed');
    expect(failure).toMatchObject({ level: 40, model: 'scripted', correlationId: reply.correlationId });
    expect(failure?.['err']).toMatchObject({ status: 401 });
    expect(String((failure?.['err'] as { message?: string } | undefined)?.message)).toMatch(/Incorrect API key provided: \[redacted\]/);
  });

  it('a 401 from an MCP server echoing the bearer token is logged without the token', async () => {
    const mcp = createServer((req, res) => {
      const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `invalid token ${given}` }));
    });
    servers.push(mcp);
    await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
    harness = await createHarness(() => ({ text: 'Still here.' }));
    const palaver = await harness.start({ mcp: { servers: [{ label: 'echoing', url, bearerToken: TEST_SECRETS.mcpBearerToken, timeoutMs: 5_000 }] } });

    const reply = await palaver.chat({ userId: 'alice', text: 'Hello?' });

    expect(reply.status).toBe('completed');
    const text = harness.logText();
    expect(text).not.toContain(TEST_SECRETS.mcpBearerToken);
    const unavailable = harness.logs.find((line) => line['msg'] === 'tool host unavailable');
    expect(unavailable).toMatchObject({ host: 'mcp:echoing', correlationId: reply.correlationId });
    expect(JSON.stringify(unavailable)).toContain('invalid token [redacted]');
  });
});
