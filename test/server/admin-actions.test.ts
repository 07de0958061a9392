import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { adminActions, sentAsAgent } from '../../src/admin/api-contract.js';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { ModelScript } from '../../src/testing/index.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { createTelegramRig, inboxState, userTexts, waitUntilSettled, type TelegramRig } from '../telegram/telegram-support.js';

let rig: TelegramRig | undefined;
let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rig?.close();
  await harness?.close();
  rig = harness = undefined;
});

const LEASE_MS = 300;

/** The admin API of a running Palaver, over real HTTP with the admin token. */
async function adminOf(palaver: Palaver) {
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
}

/** A Telegram bot Palaver (fake Bot API, scripted model, SQLite file) serving the admin API. */
async function telegramPalaver(script: ModelScript) {
  rig = await createTelegramRig(script, {}, { start: false });
  const config = {
    server: { adminToken: TEST_SECRETS.adminToken },
    inbox: { leaseMs: LEASE_MS },
    channels: { web: { enabled: false }, telegram: { token: rig.telegram.token, apiRoot: rig.telegram.apiRoot, quietWindowMs: 100, drafts: false } },
  };
  const start = async () => {
    rig!.palaver = await rig!.harness.start(config);
    return { palaver: rig!.palaver, admin: await adminOf(rig!.palaver) };
  };
  return { rig, start, ...(await start()) };
}

async function sessionOf(palaver: Palaver, chatId: number): Promise<string> {
  const session = await palaver.store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(chatId));
  if (!session) throw new Error(`no session for chat ${chatId}`);
  return session.id;
}

describe('admin API: operators in conversations', () => {
  it('sends a message as the agent into a Telegram chat once, also when the request is repeated with its key', async () => {
    const { rig, palaver, admin } = await telegramPalaver(() => ({ text: 'Hello from the agent.' }));
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 42, text: 'is my order on its way?' });
    await telegram.waitForMessages(1, { chatId: 42 });
    const sessionId = await sessionOf(palaver, 42);

    const headers = { 'idempotency-key': 'send-1', 'x-palaver-actor': 'Olena', 'x-request-id': 'req-77' };
    const first = await admin('POST', `/conversations/${sessionId}/messages`, { text: 'Your parcel left the depot at 9:40.' }, headers);
    const again = await admin('POST', `/conversations/${sessionId}/messages`, { text: 'Your parcel left the depot at 9:40.' }, headers);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(sentAsAgent.parse(first.body)).toEqual({ messageId: expect.any(String), parts: 1, duplicate: false });
    expect(again.body).toEqual({ ...first.body, duplicate: true });

    await telegram.waitForMessages(2, { chatId: 42 });
    await waitUntilSettled(harness, 1);
    expect(telegram.sentTo(42).map((message) => message.text)).toEqual(['Hello from the agent.', 'Your parcel left the depot at 9:40.']);
    // Stored as the agent's, with the operator who wrote it; the model reads it as its own words next turn.
    const transcript = await palaver.store.messages.listRecent(sessionId, { limit: 10, audience: 'display' });
    expect(transcript.at(-1)).toMatchObject({
      id: first.body['messageId'],
      role: 'assistant',
      content: 'Your parcel left the depot at 9:40.',
      meta: { operator: 'Olena', requestId: 'req-77' },
    });
    telegram.sendText({ chatId: 42, text: 'thanks' });
    await telegram.waitForMessages(3, { chatId: 42 });
    const next = harness.model.calls.at(-1)!;
    expect(next.history.some((item) => item.type === 'message' && item.role === 'assistant' && item.content === 'Your parcel left the depot at 9:40.')).toBe(
      true,
    );

    // The same key for another text is refused; nothing more reaches the chat.
    const reused = await admin('POST', `/conversations/${sessionId}/messages`, { text: 'something else' }, headers);
    expect(reused.status).toBe(409);
    const audit = adminActions.parse((await admin('GET', '/actions?limit=10')).body).actions;
    expect(audit.filter((action) => action.action === 'send')).toEqual([
      {
        id: expect.any(String),
        action: 'send',
        actor: 'Olena',
        // The admin token's client named Olena: a claim, not an operator account.
        operatorId: null,
        requestId: 'req-77',
        sessionId,
        userId: expect.any(String),
        details: expect.objectContaining({ messageId: first.body['messageId'], parts: 1 }),
        at: expect.any(String),
      },
    ]);
    await waitUntilSettled(harness, 2);
    expect(telegram.sentTo(42).filter((message) => message.text.includes('depot'))).toHaveLength(1);
  });

  it('refuses a send into an unknown conversation (404), one whose channel does not run here (409), and an empty text (400)', async () => {
    const { palaver, admin } = await telegramPalaver(() => ({ text: 'hi' }));
    const { user } = await palaver.store.users.resolveAccount({ channel: 'elsewhere', accountId: 'someone' });
    const foreign = await palaver.store.sessions.open({ userId: user.id, channel: 'elsewhere', conversationId: 'c1' });
    expect((await admin('POST', '/conversations/no-such-session/messages', { text: 'hello' })).status).toBe(404);
    const refused = await admin('POST', `/conversations/${foreign.id}/messages`, { text: 'hello' });
    expect(refused.status).toBe(409);
    expect(refused.body['error']['code']).toBe('conflict');
    expect(await palaver.store.messages.listRecent(foreign.id, { limit: 5 })).toEqual([]);
    expect((await admin('POST', `/conversations/${foreign.id}/messages`, { text: '   ' })).status).toBe(400);
    expect((await admin('POST', `/conversations/${foreign.id}/pause`, undefined, { 'x-palaver-actor': "Robert'); DROP TABLE users;--" })).status).toBe(400);
  });

  it('holds a paused conversation: messages stored, never answered (also by another process after the lease ran out), then answered once on resume', async () => {
    const { rig, palaver, admin } = await telegramPalaver((call) => ({ text: `answered: ${userTexts(call).slice(-2).join(' + ')}` }));
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 7, text: 'hello' });
    await telegram.waitForMessages(1, { chatId: 7 });
    const sessionId = await sessionOf(palaver, 7);
    expect((await admin('POST', `/conversations/${sessionId}/pause`, undefined, { 'x-palaver-actor': 'Olena' })).body).toEqual({
      sessionId,
      paused: true,
      changed: true,
    });
    const callsBefore = harness.model.calls.length;

    telegram.sendText({ chatId: 7, text: 'one' });
    await expect.poll(() => inboxState(harness)).toMatchObject({ received: 2, queued: 1 });
    telegram.sendText({ chatId: 7, text: 'two' });
    await expect.poll(() => inboxState(harness)).toMatchObject({ received: 3, queued: 2 });
    // Held once the quiet window passed: leased to nobody, waiting for the resume.
    await expect.poll(async () => (await palaver.store.inbound.listQueued(sessionId)).length).toBe(2);
    const held = () =>
      harness.logs
        .filter((line) => line['msg'] === 'conversation paused by an operator: messages stored, held until it is resumed')
        .reduce((sum, line) => sum + Number(line['held']), 0);
    await expect.poll(held).toBe(2);

    // A message of another chat that a process which died left unanswered: the next process's recovery round answers
    // it, and passes over the paused chat's held messages in the same query.
    const { user } = await palaver.store.users.resolveAccount({ channel: 'telegram', accountId: '99' });
    const orphan = await palaver.store.sessions.open({ userId: user.id, channel: TELEGRAM_BOT_CHANNEL, conversationId: '99' });
    await palaver.store.inbound.accept(
      {
        channel: TELEGRAM_BOT_CHANNEL,
        conversationId: '99',
        accountId: '99',
        accountNamespace: 'telegram',
        userId: user.id,
        sessionId: orphan.id,
        text: 'left behind',
        messageId: null,
        dedupeKey: null,
        correlationId: 'orphan',
        languageHint: null,
        displayName: null,
        conversationKind: 'direct',
      },
      { owner: 'a-process-that-died', leaseMs: 1 },
    );
    await palaver.close();
    const second = await rig.harness.start({
      server: { adminToken: TEST_SECRETS.adminToken },
      inbox: { leaseMs: LEASE_MS },
      channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 100, drafts: false } },
    });
    rig.palaver = second;
    await telegram.waitForMessages(1, { chatId: 99 });
    expect(telegram.sentTo(7)).toHaveLength(1);
    expect(harness.model.calls.filter((call) => userTexts(call).includes('one'))).toEqual([]);
    expect(harness.model.calls.length).toBe(callsBefore + 1);
    expect((await second.store.inbound.listQueued(sessionId)).map((record) => record.text)).toEqual(['one', 'two']);

    // Resumed through the second process: both waiting messages, one turn, one reply.
    const admin2 = await adminOf(second);
    const resumed = await admin2('POST', `/conversations/${sessionId}/resume`, undefined, { 'x-request-id': 'resume-1' });
    expect(resumed.body).toEqual({ sessionId, paused: false, changed: true, answering: 2 });
    const replies = await telegram.waitForMessages(2, { chatId: 7 });
    expect(replies[1]!.text).toBe('answered: one + two');
    await waitUntilSettled(harness, 4);
    expect(telegram.sentTo(7)).toHaveLength(2);
    expect(harness.model.calls.filter((call) => userTexts(call).includes('two'))).toHaveLength(1);
    const audit = adminActions.parse((await admin2('GET', '/actions')).body).actions;
    expect(audit.map((action) => [action.action, action.actor, action.requestId])).toEqual([
      ['resume', 'admin', 'resume-1'],
      ['pause', 'Olena', null],
    ]);
  });

  it('lets a turn that runs when the conversation is paused finish, and holds the next one', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const turnStarted = new Promise<void>((resolve) => (started = resolve));
    const { rig, palaver, admin } = await telegramPalaver(async () => {
      started();
      await gate;
      return { text: 'the running turn' };
    });
    const { telegram, harness } = rig;
    telegram.sendText({ chatId: 3, text: 'first' });
    await turnStarted;
    const sessionId = await sessionOf(palaver, 3);
    expect((await admin('POST', `/conversations/${sessionId}/pause`)).status).toBe(200);
    release();
    const [reply] = await telegram.waitForMessages(1, { chatId: 3 });
    expect(reply!.text).toBe('the running turn');
    telegram.sendText({ chatId: 3, text: 'second' });
    await expect
      .poll(() => harness.logs.some((line) => line['msg'] === 'conversation paused by an operator: messages stored, held until it is resumed'))
      .toBe(true);
    expect(harness.model.calls).toHaveLength(1);
    expect((await palaver.store.inbound.listQueued(sessionId)).map((record) => record.text)).toEqual(['second']);
  });
});

describe('admin API: ending a conversation', () => {
  it('ends it: completed, its end time kept, and the next message starts a fresh context', async () => {
    harness = await createHarness((call) => ({ text: `seen ${userTexts(call).length}` }));
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
    const admin = await adminOf(palaver);
    await palaver.chat({ userId: 'ada', text: 'my name is Ada' });
    const before = await palaver.chat({ userId: 'ada', text: 'what is my name?' });
    expect(before.text).toBe('seen 2');

    const ended = await admin('POST', `/conversations/${before.sessionId}/end`, undefined, { 'x-palaver-actor': 'Olena' });
    expect(ended.body).toEqual({ sessionId: before.sessionId, status: 'completed', endedAt: expect.any(String) });
    expect((await palaver.store.sessions.findById(before.sessionId))?.endedAt).toEqual(new Date(ended.body['endedAt']));

    const after = await palaver.chat({ userId: 'ada', text: 'who am I?' });
    expect(after.sessionId).toBe(before.sessionId);
    expect(after.text).toBe('seen 1');
    expect(userTexts(harness.model.calls.at(-1)!)).toEqual(['who am I?']);
    // Nothing is deleted: the transcript keeps what came before the end.
    expect((await palaver.store.messages.listRecent(before.sessionId, { limit: 20, audience: 'display' })).map((message) => message.content)).toContain(
      'my name is Ada',
    );
    expect((await admin('GET', '/actions')).body['actions'][0]).toMatchObject({ action: 'end', actor: 'Olena', sessionId: before.sessionId });
    expect((await admin('POST', '/conversations/nope/end')).status).toBe(404);
  });

  it("keeps the identity changes of the admin API in the operators' audit too, with who made them", async () => {
    harness = await createHarness(() => ({ text: 'hi' }));
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, roles: { definitions: { driver: { tools: [] } } } });
    const admin = await adminOf(palaver);
    await palaver.chat({ userId: 'ada', text: 'hello' });
    const userId = (await admin('GET', '/accounts/api/ada')).body['userId'] as string;
    expect((await admin('PUT', `/users/${userId}/role`, { role: 'driver' }, { 'x-palaver-actor': 'Olena', 'x-request-id': 'req-role' })).status).toBe(200);
    expect((await admin('PATCH', `/users/${userId}/profile`, { preferences: { timeZone: 'Europe/Kyiv' } })).status).toBe(200);
    const actions = adminActions.parse((await admin('GET', '/actions')).body).actions;
    expect(actions.map((action) => [action.action, action.actor, action.requestId, action.userId])).toEqual([
      ['profile', 'admin', null, userId],
      ['role', 'Olena', 'req-role', userId],
    ]);
    expect(actions[1]!.details).toEqual({ from: null, to: 'driver' });
    expect(JSON.stringify(actions)).not.toContain('Europe/Kyiv');
  });

  it('audits an identity change with the client behind a trusted proxy, not the proxy, and ignores the header from anyone else', async () => {
    harness = await createHarness(() => ({ text: 'hi' }));
    const behindProxy = await harness.start({
      server: { adminToken: TEST_SECRETS.adminToken, trustedProxies: ['127.0.0.1'] },
      roles: { definitions: { driver: { tools: [] } } },
    });
    const admin = await adminOf(behindProxy);
    await behindProxy.chat({ userId: 'ada', text: 'hello' });
    const userId = (await admin('GET', '/accounts/api/ada')).body['userId'] as string;
    expect((await admin('PUT', `/users/${userId}/role`, { role: 'driver' }, { 'x-forwarded-for': '198.51.100.7' })).status).toBe(200);
    const audited = async (palaver: Palaver, user: string) =>
      (await palaver.store.identityEvents.listByUser(user)).filter((event) => event.kind === 'admin_change').map((event) => event.details['remoteAddress']);
    expect(await audited(behindProxy, userId)).toEqual(['198.51.100.7']);

    const direct = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, roles: { definitions: { driver: { tools: [] } } } });
    const directAdmin = await adminOf(direct);
    await direct.chat({ userId: 'bo', text: 'hello' });
    const bo = (await directAdmin('GET', '/accounts/api/bo')).body['userId'] as string;
    expect((await directAdmin('PUT', `/users/${bo}/role`, { role: 'driver' }, { 'x-forwarded-for': '198.51.100.7' })).status).toBe(200);
    expect(await audited(direct, bo)).toEqual(['127.0.0.1']);
  });

  it('sends a message as the agent directly through a channel without an outbox, once per key', async () => {
    harness = await createHarness(() => ({ text: 'hi' }));
    const memo = new MemoryChannel({ name: 'memo' });
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } }, { channels: [memo] });
    const admin = await adminOf(palaver);
    const { outcome } = await memo.reply(await memo.say('hello', { accountId: 'ada', conversationId: 'c-1' }));
    const headers = { 'idempotency-key': 'memo-1' };
    const first = await admin('POST', `/conversations/${outcome.sessionId}/messages`, { text: 'An operator here.' }, headers);
    const again = await admin('POST', `/conversations/${outcome.sessionId}/messages`, { text: 'An operator here.' }, headers);
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.body['duplicate']).toBe(true);
    await expect.poll(() => memo.sent.map((sent) => sent.value)).toEqual(['hi', 'An operator here.']);
    expect(memo.sent[1]!.target).toMatchObject({ channel: 'memo', conversationId: 'c-1', accountId: 'ada', sessionId: outcome.sessionId });
    // No outbox for it: it was sent straight away.
    expect(await palaver.store.deliveries.listForReply(first.body['messageId'] as string)).toEqual([]);
  });
});
