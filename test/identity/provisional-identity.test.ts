import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ChannelError, IdentityError } from '../../src/domain/errors.js';
import type { Store } from '../../src/domain/ports/store.js';
import { McpIdentityResolver } from '../../src/identity/mcp-identity.js';
import { openStore } from '../../src/store/index.js';
import { MemoryChannel } from '../../src/testing/index.js';
import { createHarness } from '../support/palaver-harness.js';
import { startDirectoryServer, type DirectoryServer } from './directory-server.js';

// Seed 000: when verify_user cannot be reached, the bot goes on with the Telegram account as the user id, and the
// person is joined to their real user once the directory answers. Here: `identity.onUnreachable: "provisional"`.

const dir = mkdtempSync(join(tmpdir(), 'palaver-provisional-'));
let files = 0;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function givenStore(): Promise<Store> {
  const store = await openStore(`sqlite:${join(dir, `provisional-${(files += 1)}.db`)}`);
  cleanups.push(() => store.close());
  return store;
}

async function givenDirectory(options: Parameters<typeof startDirectoryServer>[0] = {}): Promise<DirectoryServer> {
  const directory = await startDirectoryServer(options);
  cleanups.push(() => directory.close());
  return directory;
}

/** A resolver that asks the directory every time, standing in a provisional user when it is unreachable. */
function givenResolver(store: Store, url: string): McpIdentityResolver {
  const resolver = new McpIdentityResolver(store, { url, timeoutMs: 5_000, cacheTtlSeconds: 0, onUnreachable: 'provisional' });
  cleanups.push(() => resolver.close());
  return resolver;
}

/** A loopback port nothing listens on (yet). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('identity.onUnreachable: provisional (McpIdentityResolver)', () => {
  it('answers a new account as a provisional user while the directory is down, and joins it to the real user once it answers', async () => {
    const store = await givenStore();
    const port = await closedPort();
    const resolver = givenResolver(store, `http://127.0.0.1:${port}/mcp`);

    const standIn = await resolver.resolve({ channel: 'telegram', accountId: '4242', phone: '+380671234567', phoneVerified: true });
    expect(standIn).toMatchObject({ user: { id: 'provisional:telegram:4242', phone: null }, provisional: true });
    expect(standIn.phone).toBeUndefined();
    // Still down: the same stand-in, not a second one.
    expect((await resolver.resolve({ channel: 'telegram', accountId: '4242' })).user.id).toBe('provisional:telegram:4242');

    const directory = await givenDirectory({ port, answer: () => ({ content: [], structuredContent: { user_id: 'crm-17' } }) });
    const real = await resolver.resolve({ channel: 'telegram', accountId: '4242' });

    expect(real.user.id).toBe('crm-17');
    expect(real.provisional).toBeUndefined();
    expect(directory.calls).toHaveLength(1);
    expect((await store.users.findByAccount('telegram', '4242'))?.id).toBe('crm-17');
    expect(await store.identityEvents.listByUser('crm-17')).toEqual([
      expect.objectContaining({
        kind: 'relink',
        fromUserId: 'provisional:telegram:4242',
        toUserId: 'crm-17',
        details: expect.objectContaining({ fromProvisional: true }),
      }),
    ]);
  });

  it('refuses an account the directory already bound to a user instead of standing in for it', async () => {
    const store = await givenStore();
    const directory = await givenDirectory();
    const resolver = givenResolver(store, directory.url);
    expect((await resolver.resolve({ channel: 'telegram', accountId: '7' })).user.id).toBe('user-7');

    await directory.close();
    const error = await rejection(resolver.resolve({ channel: 'telegram', accountId: '7' }));

    expect(error).toBeInstanceOf(IdentityError);
    expect(error).toMatchObject({ failure: 'unreachable' });
    expect((await store.users.findByAccount('telegram', '7'))?.id).toBe('user-7');
    expect(await store.users.findById('provisional:telegram:7')).toBeUndefined();
  });

  it("refuses a directory answer that names a provisional user, and keeps accounts' stand-ins apart", async () => {
    const store = await givenStore();
    const directory = await givenDirectory({ answer: () => ({ content: [], structuredContent: { user_id: 'provisional:telegram:victim' } }) });
    const resolver = givenResolver(store, directory.url);
    expect(await rejection(resolver.resolve({ channel: 'telegram', accountId: 'mallory' }))).toMatchObject({ failure: 'unrecognised' });

    const down = givenResolver(store, `http://127.0.0.1:${await closedPort()}/mcp`);
    const first = await down.resolve({ channel: 'a', accountId: 'b:c' });
    const second = await down.resolve({ channel: 'a:b', accountId: 'c' });
    expect(first.user.id).not.toBe(second.user.id);
  });
});

describe('the pipeline with identity.onUnreachable: provisional', () => {
  it('answers while the directory is down and carries the conversation to the real user when it is back; the stand-in keeps its role', async () => {
    const port = await closedPort();
    const harness = await createHarness((call) => ({ text: `reply ${call.messages.filter((item) => item.type === 'message').length}` }));
    cleanups.push(() => harness.close());
    const chat = new MemoryChannel({ name: 'telegram-bot' });
    const palaver = await harness.start(
      { identity: { resolver: { kind: 'mcp', url: `http://127.0.0.1:${port}/mcp`, timeoutMs: 5_000, cacheTtlSeconds: 0 }, onUnreachable: 'provisional' } },
      { channels: [chat] },
    );

    const first = await chat.say('hi, I am new', { accountId: '4242' });
    expect(first).toMatchObject({ status: 'accepted', userId: 'provisional:telegram-bot:4242' });
    expect((await chat.waitForReply(first)).parts).toEqual(['reply 1']);
    // Something the stand-in was given (here a role) is its own, not the real user's.
    await palaver.store.userState.save('provisional:telegram-bot:4242', { role: 'transporter', responseChainId: null, recentToolCalls: [], flows: {} });

    await givenDirectory({ port, answer: () => ({ content: [], structuredContent: { user_id: 'crm-5' } }) });
    const second = await chat.say('am I known now?', { accountId: '4242' });

    expect(second).toMatchObject({ status: 'accepted', userId: 'crm-5', sessionId: first.status === 'accepted' ? first.sessionId : '' });
    // The model sees the conversation so far: it was carried to the real user.
    expect((await chat.waitForReply(second)).parts).toEqual(['reply 3']);
    expect((await palaver.store.sessions.findByConversation('telegram-bot', '4242'))?.userId).toBe('crm-5');
    const realState = await palaver.store.userState.get('crm-5');
    expect(realState === undefined ? null : (JSON.parse(realState.raw) as { role: string | null }).role).toBeNull();
    expect(harness.logs.some((line) => line['msg'] === 'identity directory unreachable; answering under a provisional identity')).toBe(true);
  });

  it('refuses as before when onUnreachable is left at refuse', async () => {
    const harness = await createHarness(() => ({ text: 'must not be sent' }));
    cleanups.push(() => harness.close());
    const chat = new MemoryChannel({ name: 'telegram-bot' });
    await harness.start({ identity: { resolver: { kind: 'mcp', url: `http://127.0.0.1:${await closedPort()}/mcp`, timeoutMs: 5_000 } } }, { channels: [chat] });

    expect(await rejection(chat.say('hi', { accountId: '4242' }))).toBeInstanceOf(ChannelError);
    expect(harness.model.calls).toHaveLength(0);
  });
});
