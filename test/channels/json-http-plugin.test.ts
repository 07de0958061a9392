import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/http-server.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

/**
 * The example channel of docs/writing-a-channel.md, end to end: turned on by its config slice alone (its folder and
 * one line in src/channels/registry.ts), over Palaver's real HTTP server, a real SQLite file and a scripted model
 * over HTTP.
 */
const API_KEY = 'json-http-test-key';

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;

afterEach(async () => {
  await server?.close();
  await harness?.close();
  server = undefined;
  harness = undefined;
});

async function serve(
  channel: Record<string, unknown>,
): Promise<{ url: string; post(body: unknown, key?: string): Promise<Response>; replies(conversation: string): Promise<{ id: string; text: string }[]> }> {
  harness = await createHarness((call) => ({ text: `You said: ${lastUserText(call)}` }));
  const palaver = await harness.start({ server: { apiKey: API_KEY }, channels: { jsonHttp: channel } });
  server = await palaver.serve({ port: 0 });
  const url = server.url;
  return {
    url,
    post: (body, key = API_KEY) =>
      fetch(`${url}/json/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      }),
    async replies(conversation) {
      const response = await fetch(`${url}/json/replies?conversation=${encodeURIComponent(conversation)}`, { headers: { authorization: `Bearer ${API_KEY}` } });
      return ((await response.json()) as { replies: { id: string; text: string }[] }).replies;
    },
  };
}

describe('the json-http channel plug-in', () => {
  it('answers a posted message through the pipeline, and a redelivered one only once', async () => {
    const channel = await serve({ enabled: true });
    const posted = await channel.post({ user: 'alice', conversation: 'order-7', text: 'Where is my parcel?', id: 'm-1' });
    expect(posted.status).toBe(202);
    expect(await posted.json()).toMatchObject({ status: 'accepted' });
    await expect.poll(() => channel.replies('order-7'), { timeout: 10_000 }).toEqual([{ id: expect.any(String), text: 'You said: Where is my parcel?' }]);

    const again = await channel.post({ user: 'alice', conversation: 'order-7', text: 'Where is my parcel?', id: 'm-1' });
    expect(await again.json()).toMatchObject({ status: 'duplicate' });
    const next = await channel.post({ user: 'alice', conversation: 'order-7', text: 'Thanks', id: 'm-2' });
    expect(next.status).toBe(202);
    await expect.poll(() => channel.replies('order-7'), { timeout: 10_000 }).toHaveLength(2);
    expect((await channel.replies('order-7')).map((part) => part.text)).toEqual(['You said: Where is my parcel?', 'You said: Thanks']);
    expect(harness!.model.calls).toHaveLength(2);
  });

  it('splits a reply longer than maxMessageChars into parts, in order', async () => {
    const channel = await serve({ enabled: true, maxMessageChars: 100 });
    const words = Array.from({ length: 40 }, (_, index) => `word${index}`).join(' ');
    expect((await channel.post({ user: 'bob', text: words })).status).toBe(202);
    await expect.poll(async () => (await channel.replies('bob')).length, { timeout: 10_000 }).toBeGreaterThan(1);
    const parts = await channel.replies('bob');
    expect(parts.every((part) => part.text.length <= 100)).toBe(true);
    expect(
      parts
        .map((part) => part.text)
        .join(' ')
        .replace(/\s+/g, ' '),
    ).toBe(`You said: ${words}`);
  });

  it('refuses a caller without the server API key, and a message that is not { user, text }', async () => {
    const channel = await serve({ enabled: true });
    expect((await channel.post({ user: 'mallory', text: 'hi' }, 'wrong-key-0000')).status).toBe(401);
    const invalid = await channel.post({ text: 'no user' });
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toMatchObject({ error: { code: 'invalid_input' } });
    expect(harness!.model.calls).toHaveLength(0);
  });

  it('is off unless its slice turns it on', async () => {
    const channel = await serve({});
    expect((await channel.post({ user: 'alice', text: 'hello' })).status).toBe(404);
  });
});
