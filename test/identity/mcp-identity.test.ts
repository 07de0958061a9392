import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ChannelError, IdentityError } from '../../src/domain/errors.js';
import type { Store } from '../../src/domain/ports/store.js';
import { McpIdentityResolver, type McpIdentityResolverOptions } from '../../src/identity/mcp-identity.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { openStore } from '../../src/store/index.js';
import { MemoryChannel } from '../../src/testing/index.js';
import { createHarness } from '../support/palaver-harness.js';
import { startDirectoryServer, type DirectoryServer } from './directory-server.js';

const dir = mkdtempSync(join(tmpdir(), 'palaver-mcp-identity-'));
let files = 0;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function givenStore(): Promise<Store> {
  const store = await openStore(`sqlite:${join(dir, `identity-${(files += 1)}.db`)}`);
  cleanups.push(() => store.close());
  return store;
}

async function givenDirectory(options: Parameters<typeof startDirectoryServer>[0] = {}): Promise<DirectoryServer> {
  const directory = await startDirectoryServer(options);
  cleanups.push(() => directory.close());
  return directory;
}

function givenResolver(store: Store, options: McpIdentityResolverOptions): McpIdentityResolver {
  const resolver = new McpIdentityResolver(store, { timeoutMs: 5_000, ...options });
  cleanups.push(() => resolver.close());
  return resolver;
}

/** A logger whose lines the test can read. */
function captureLogs(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), lines: () => lines };
}

const failedAttempts = (lines: Array<Record<string, unknown>>): unknown[] =>
  lines.filter((line) => line['msg'] === 'identity directory call failed').map((line) => line['attempt']);

/** A loopback port nothing listens on. */
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

describe('McpIdentityResolver against a real MCP server', () => {
  it('takes the user from structuredContent, creates them under that id and binds the account', async () => {
    const store = await givenStore();
    const directory = await givenDirectory({ answer: () => ({ content: [], structuredContent: { user_id: 'crm-17', name: 'Olena' } }) });
    const resolver = givenResolver(store, { url: directory.url, bearerToken: 'directory-token-123' });

    const { user, accounts } = await resolver.resolve({ channel: 'telegram-bot', accountId: '4242', displayName: 'Olena' });

    expect(user).toMatchObject({ id: 'crm-17', displayName: 'Olena' });
    expect(accounts).toEqual([{ channel: 'telegram-bot', accountId: '4242' }]);
    expect(directory.calls).toEqual([{ args: { channel: 'telegram-bot', account_id: '4242' }, authorization: 'Bearer directory-token-123' }]);
    expect((await store.users.findByAccount('telegram-bot', '4242'))?.id).toBe('crm-17');
    expect((await resolver.find({ channel: 'telegram-bot', accountId: '4242' }))?.user.id).toBe('crm-17');
  });

  it('takes the user from JSON text content under id, and a number id as its digits', async () => {
    const store = await givenStore();
    const directory = await givenDirectory({ tool: 'whois', answer: () => ({ content: [{ type: 'text', text: '{"id": 90210, "status": "active"}' }] }) });
    const resolver = givenResolver(store, { url: directory.url, tool: 'whois' });

    const { user } = await resolver.resolve({ channel: 'web', accountId: 'visitor-1' });

    expect(user.id).toBe('90210');
    expect(directory.calls.map((call) => call.args)).toEqual([{ channel: 'web', account_id: 'visitor-1' }]);
  });

  it('answers a second lookup of the same account from its cache, without calling the directory', async () => {
    const store = await givenStore();
    const directory = await givenDirectory();
    const resolver = givenResolver(store, { url: directory.url });

    const first = await resolver.resolve({ channel: 'telegram-bot', accountId: '7' });
    const second = await resolver.resolve({ channel: 'telegram-bot', accountId: '7' });
    await resolver.resolve({ channel: 'telegram-bot', accountId: '8' });

    expect(second.user).toEqual(first.user);
    expect(directory.calls.map((call) => call.args.account_id)).toEqual(['7', '8']);
  });

  it('asks the directory again when the claim carries a verified phone, and follows it to another user', async () => {
    const store = await givenStore();
    const directory = await givenDirectory();
    const resolver = givenResolver(store, { url: directory.url });
    const before = await resolver.resolve({ channel: 'telegram-bot', accountId: '7' });
    expect(before.user.id).toBe('user-7');

    // The person shared a phone that the directory knows as someone already registered.
    directory.answer = (args) => ({
      content: [],
      structuredContent: { user_id: args.phone === '380671234567' ? 'crm-phone-owner' : `user-${args.account_id}` },
    });
    // A number merely typed is not passed on and does not bypass the cache.
    expect((await resolver.resolve({ channel: 'telegram-bot', accountId: '7', phone: '380671234567' })).user.id).toBe('user-7');
    expect(directory.calls).toHaveLength(1);
    // Telegram's contacts write the number without the plus; the directory gets E.164 digits either way.
    const after = await resolver.resolve({ channel: 'telegram-bot', accountId: '7', phone: '+380 67 123 4567', phoneVerified: true });

    expect(directory.calls.map((call) => call.args)).toEqual([
      { channel: 'telegram-bot', account_id: '7' },
      { channel: 'telegram-bot', account_id: '7', phone: '380671234567' },
    ]);
    expect(after.user.id).toBe('crm-phone-owner');
    expect((await store.users.findByAccount('telegram-bot', '7'))?.id).toBe('crm-phone-owner');
    expect(await store.users.listAccounts('user-7')).toEqual([]);
    expect(await store.identityEvents.listByUser('crm-phone-owner')).toEqual([
      expect.objectContaining({
        kind: 'relink',
        channel: 'telegram-bot',
        accountId: '7',
        fromUserId: 'user-7',
        toUserId: 'crm-phone-owner',
        actor: 'resolver',
      }),
    ]);
    // The cache now holds the new answer.
    expect((await resolver.resolve({ channel: 'telegram-bot', accountId: '7' })).user.id).toBe('crm-phone-owner');
    expect(directory.calls).toHaveLength(2);
  });

  it('retries with a fresh client when the server lost the session, and succeeds', async () => {
    const store = await givenStore();
    const directory = await givenDirectory();
    const logs = captureLogs();
    const resolver = givenResolver(store, { url: directory.url, cacheTtlSeconds: 0, logger: logs.logger });
    await resolver.resolve({ channel: 'web', accountId: 'a' });

    await directory.dropSessions(); // the old session id now gets HTTP 404
    const { user } = await resolver.resolve({ channel: 'web', accountId: 'b' });

    expect(user.id).toBe('user-b');
    expect(failedAttempts(logs.lines())).toEqual([1]);
    expect(directory.calls.map((call) => call.args.account_id)).toEqual(['a', 'b']);
  });

  it('retries with a fresh client when the server itself was restarted on the same port', async () => {
    const store = await givenStore();
    const first = await startDirectoryServer();
    const logs = captureLogs();
    const resolver = givenResolver(store, { url: first.url, cacheTtlSeconds: 0, logger: logs.logger });
    await resolver.resolve({ channel: 'web', accountId: 'a' });

    await first.close();
    const restarted = await givenDirectory({ port: first.port });
    const { user } = await resolver.resolve({ channel: 'web', accountId: 'b' });

    expect(user.id).toBe('user-b');
    expect(failedAttempts(logs.lines())).toEqual([1]);
    expect(restarted.calls.map((call) => call.args.account_id)).toEqual(['b']);
  });

  it('rejects with IdentityError unreachable when nothing listens, after two attempts, and binds nobody', async () => {
    const store = await givenStore();
    const logs = captureLogs();
    const resolver = givenResolver(store, { url: `http://127.0.0.1:${await closedPort()}/mcp`, logger: logs.logger });

    const error = await rejection(resolver.resolve({ channel: 'web', accountId: 'lost' }));
    expect(failedAttempts(logs.lines())).toEqual([1, 2]);

    expect(error).toBeInstanceOf(IdentityError);
    expect(error).toMatchObject({ code: 'identity_unreachable', failure: 'unreachable', retryable: true });
    expect((error as Error).message).toMatch(/could not be reached \(2 attempts\)/);
    expect(await store.users.findByAccount('web', 'lost')).toBeUndefined();
  });

  it('rejects with IdentityError unrecognised when the directory names nobody or answers with an error', async () => {
    const store = await givenStore();
    const directory = await givenDirectory({ answer: () => ({ content: [{ type: 'text', text: 'no such customer' }], structuredContent: { user_id: null } }) });
    const resolver = givenResolver(store, { url: directory.url });

    expect(await rejection(resolver.resolve({ channel: 'web', accountId: 'x' }))).toMatchObject({ code: 'identity_unrecognised', retryable: false });
    directory.answer = () => ({ isError: true, content: [{ type: 'text', text: '{"user_id": "would-be"}' }] });
    expect(await rejection(resolver.resolve({ channel: 'web', accountId: 'x' }))).toMatchObject({ code: 'identity_unrecognised' });
    // An answer, even a useless one, is not retried.
    expect(directory.calls).toHaveLength(2);
    expect(await store.users.findByAccount('web', 'x')).toBeUndefined();
  });
});

describe('the pipeline with the directory as its identity step', () => {
  const directoryConfig = (url: string) => ({ identity: { resolver: { kind: 'mcp', url, timeoutMs: 5_000 } } });

  it('answers the person as the user the directory names', async () => {
    const directory = await givenDirectory({ answer: () => ({ content: [], structuredContent: { user_id: 'crm-5' } }) });
    const harness = await createHarness(() => ({ text: 'Hello from the agent' }));
    cleanups.push(() => harness.close());
    const chat = new MemoryChannel({ name: 'telegram-bot' });
    await harness.start(directoryConfig(directory.url), { channels: [chat] });

    const said = await chat.say('hi', { accountId: '4242' });
    const { parts } = await chat.waitForReply(said);

    expect(said).toMatchObject({ status: 'accepted', userId: 'crm-5' });
    expect(parts).toEqual(['Hello from the agent']);
    expect(directory.calls.map((call) => call.args)).toEqual([{ channel: 'telegram-bot', account_id: '4242' }]);
  });

  it('tells the person, in their language, that they cannot be recognised now when the directory is unreachable; no model call, nothing queued', async () => {
    const harness = await createHarness(() => ({ text: 'must not be sent' }));
    cleanups.push(() => harness.close());
    const chat = new MemoryChannel();
    const palaver = await harness.start(directoryConfig(`http://127.0.0.1:${await closedPort()}/mcp`), { channels: [chat] });

    const refusal = await rejection(chat.say('Привіт', { accountId: 'olena', languageHint: 'uk-UA' }));

    expect(refusal).toBeInstanceOf(ChannelError);
    expect(refusal).toMatchObject({
      code: 'identity_unreachable',
      message: 'Вибачте, зараз я не можу перевірити, хто ви, тож поки не можу відповісти. Будь ласка, спробуйте за кілька хвилин.',
    });
    expect(harness.model.calls).toHaveLength(0);
    expect(await palaver.store.sessions.findByConversation('memory', 'olena')).toBeUndefined();
    expect(await palaver.store.users.findByAccount('memory', 'olena')).toBeUndefined();
    // Not dropped silently: the refusal is logged with the message's correlation id.
    const logged = harness.logs.find((line) => line['msg'] === 'message refused: the identity resolver could not say who sent it');
    expect(logged).toMatchObject({ channel: 'memory', failure: 'unreachable' });
    expect(typeof logged?.['correlationId']).toBe('string');
  });

  it('answers a web request with 503 and the localised text when the directory is unreachable', async () => {
    const harness = await createHarness(() => ({ text: 'must not be sent' }));
    cleanups.push(() => harness.close());
    const palaver = await harness.start(directoryConfig(`http://127.0.0.1:${await closedPort()}/mcp`));
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => server.close());

    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-language': 'ru-RU,ru;q=0.9' },
      body: JSON.stringify({
        threadId: 'thread-1',
        runId: 'run-1',
        messages: [{ id: 'm1', role: 'user', content: 'Здравствуйте' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: { userId: 'ivan' },
      }),
    });

    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      error: {
        code: 'identity_unreachable',
        message: 'Извините, сейчас я не могу проверить, кто вы, поэтому пока не могу ответить. Пожалуйста, попробуйте через несколько минут.',
      },
    });
    expect(harness.model.calls).toHaveLength(0);
  });
});
