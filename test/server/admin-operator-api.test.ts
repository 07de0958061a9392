import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { addCosts } from '../../src/domain/money.js';
import { conversationsPage, costs, liveTurns, overview, transcript, usersPage } from '../../src/admin/api-contract.js';
import type { ModelScript, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await harness?.close();
  harness = undefined;
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up an order',
  input: z.object({ id: z.number() }),
  run: ({ id }) => ({ id, status: 'shipped' }),
});

// Token counts the scripted model reports per call, and its prices in USD per million tokens (as test/runtime/costs).
const TOOL_CALL = { input: 1200, cached: 1000, output: 30 };
const ANSWER = { input: 1500, cached: 1200, output: 80 };
const FOLLOW_UP = { input: 100, output: 20 };
const PRICES = { scripted: { input: '2.50', cachedInput: '1.25', output: '10' } };
const BILLING = { usdRates: { CNY: '7.1235' } };

/** "order?" → a lookup, then an answer from its result; "hold" waits for `held` to open; anything else at once. */
function orderScript(held?: { entered: () => void; release: Promise<void> }): ModelScript {
  return async (call): Promise<ScriptedReply> => {
    const last = call.messages[call.messages.length - 1];
    if (last?.type === 'tool_result') return { text: `Result: ${last.output}`, usage: ANSWER };
    if (lastUserText(call) === 'order?') return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: TOOL_CALL };
    if (lastUserText(call) === 'hold' && held) {
      held.entered();
      await held.release;
    }
    return { text: 'You are welcome.', usage: FOLLOW_UP };
  };
}

const admin = { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' };

/** A Palaver on a real SQLite file, serving HTTP, with priced turns that call a real local tool. */
async function start(script: ModelScript = orderScript()) {
  harness = await createHarness(script);
  const palaver = await harness.start(
    { server: { adminToken: TEST_SECRETS.adminToken }, model: { prices: PRICES }, billing: BILLING, identity: { phones: { defaultRegion: 'UA' } } },
    { tools: [lookup] },
  );
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  const get = async (path: string) => {
    const response = await fetch(`${server.url}${path}`, { headers: admin });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const userOf = async (accountId: string) => (await get(`/admin/accounts/api/${accountId}`)).body['userId'] as string;
  const livingIn = async (accountId: string, country: string) => {
    const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId });
    expect((await palaver.profiles.update(user.id, { preferences: { country } })).ok).toBe(true);
    return user.id;
  };
  return { palaver, server, get, userOf, livingIn };
}

/** Every page of a list, following `nextCursor` until null. */
async function walk(get: (path: string) => Promise<{ status: number; body: Record<string, any> }>, path: string, key: string): Promise<Record<string, any>[]> {
  const items: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: Record<string, any> } = await get(`${path}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(page.status).toBe(200);
    items.push(...(page.body[key] as Record<string, any>[]));
    cursor = page.body['nextCursor'] as string | null;
  } while (cursor !== null);
  return items;
}

describe('admin API for operators (read side)', () => {
  it('reports costs per user, conversation and day to the last digit of what the turns stored, in each currency', async () => {
    const { palaver, get, livingIn } = await start();
    const li = await livingIn('li', 'CN');
    const ann = await livingIn('ann', 'US');
    const turns: Record<string, { sessionId: string; costs: string[] }> = {};
    for (const user of ['li', 'ann']) {
      const first = await palaver.chat({ userId: user, text: 'order?' });
      const second = await palaver.chat({ userId: user, text: 'thanks' });
      turns[user] = { sessionId: first.sessionId, costs: [first.usage.cost, second.usage.cost] };
    }
    // What the turns stored (hand-checked in test/runtime/costs.test.ts): per reply, and per session.
    expect(turns['li']!.costs).toEqual(['0.03633', '0.003206']);
    expect(turns['ann']!.costs).toEqual(['0.0051', '0.00045']);
    expect((await palaver.store.sessions.findById(turns['li']!.sessionId))?.cost).toBe('0.039536');

    const byUser = await get('/admin/costs?by=user');
    expect(byUser.status).toBe(200);
    expect(costs.parse(byUser.body)).toEqual({
      by: 'user',
      rows: [
        {
          key: li,
          label: null,
          currency: 'CNY',
          cost: '0.039536',
          inputTokens: 2800,
          outputTokens: 130,
          turns: 2,
          models: [{ model: 'scripted', inputTokens: 2800, outputTokens: 130, cachedInputTokens: 2200, cost: '0.039536' }],
        },
        {
          key: ann,
          label: null,
          currency: 'USD',
          cost: '0.00555',
          inputTokens: 2800,
          outputTokens: 130,
          turns: 2,
          models: [{ model: 'scripted', inputTokens: 2800, outputTokens: 130, cachedInputTokens: 2200, cost: '0.00555' }],
        },
      ],
      totals: [
        { currency: 'CNY', cost: '0.039536' },
        { currency: 'USD', cost: '0.00555' },
      ],
    });

    const byConversation = (await get(`/admin/costs?by=conversation&userId=${ann}`)).body;
    expect(byConversation['rows'].map((row: any) => [row.key, row.cost, row.currency])).toEqual([[turns['ann']!.sessionId, '0.00555', 'USD']]);

    const today = new Date().toISOString().slice(0, 10);
    const byDay = costs.parse((await get(`/admin/costs?by=day&from=${today}&to=${today}`)).body);
    expect(byDay.rows.map((row) => [row.key, row.currency, row.cost, row.turns])).toEqual([
      [today, 'CNY', '0.039536', 2],
      [today, 'USD', '0.00555', 2],
    ]);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect((await get(`/admin/costs?by=day&to=${yesterday}`)).body).toEqual({ by: 'day', rows: [], totals: [] });

    // The conversation list carries the same money.
    const conversations = conversationsPage.parse((await get(`/admin/conversations?userId=${li}`)).body).conversations;
    expect(conversations).toMatchObject([
      {
        sessionId: turns['li']!.sessionId,
        cost: '0.039536',
        currency: 'CNY',
        inputTokens: 2800,
        outputTokens: 130,
        status: 'completed',
        paused: false,
        waiting: 0,
        lastMessage: { role: 'assistant', text: 'You are welcome.' },
      },
    ]);
    const users = usersPage.parse((await get('/admin/users?q=li')).body).users;
    expect(users.find((user) => user.id === li)).toMatchObject({
      cost: '0.039536',
      currency: 'CNY',
      costs: [{ currency: 'CNY', cost: '0.039536' }],
      conversations: 1,
    });
  });

  it('finds users by phone however typed, by name and by account id, and pages users and conversations without gaps or duplicates', async () => {
    const { palaver, get, userOf } = await start();
    await palaver.store.users.resolveAccount({ channel: 'api', accountId: 'olena-k', displayName: 'Olena Kovalenko' });
    for (const account of ['olena-k', 'p1', 'p2', 'p3', 'p4']) await palaver.chat({ userId: account, text: 'thanks', conversationId: `${account}-chat` });
    await palaver.chat({ userId: 'p1', text: 'thanks', conversationId: 'p1-second' });
    const olena = await userOf('olena-k');
    await palaver.store.users.setPhone(olena, '380671234567');

    const found = async (q: string) => (await get(`/admin/users?q=${encodeURIComponent(q)}`)).body['users'].map((user: any) => user.id);
    expect(await found('+380 67 123-45-67')).toEqual([olena]);
    expect(await found('1234567')).toEqual([olena]);
    expect(await found('kovalenko')).toEqual([olena]);
    expect(await found('olena-k')).toEqual([olena]);
    expect(await found('nobody-at-all')).toEqual([]);
    expect((await get(`/admin/users?q=olena`)).body['users'][0]).toMatchObject({
      displayName: 'Olena Kovalenko',
      phone: '380671234567',
      accounts: [{ channel: 'api', accountId: 'olena-k' }],
      role: null,
    });

    const users = await walk(get, '/admin/users?limit=2', 'users');
    expect(users).toHaveLength(5);
    expect(new Set(users.map((user) => user.id)).size).toBe(5);
    expect(users.map((user) => user.id)).toEqual((await get('/admin/users?limit=500')).body['users'].map((user: any) => user.id));

    const conversations = await walk(get, '/admin/conversations?limit=2', 'conversations');
    expect(conversations.map((conversation) => conversation.conversationId).sort()).toEqual([
      'olena-k-chat',
      'p1-chat',
      'p1-second',
      'p2-chat',
      'p3-chat',
      'p4-chat',
    ]);
    expect((await get('/admin/conversations?q=olena')).body['conversations'].map((c: any) => c.conversationId)).toEqual(['olena-k-chat']);
    expect((await get(`/admin/conversations?userId=${await userOf('p1')}&limit=500`)).body['conversations'].map((c: any) => c.conversationId).sort()).toEqual([
      'p1-chat',
      'p1-second',
    ]);
    expect((await get('/admin/conversations?channel=telegram')).body['conversations']).toEqual([]);
    expect((await get('/admin/conversations?paused=true')).body['conversations']).toEqual([]);
  });

  it('shows a transcript, and with ?audit=1 the tool call with its arguments, result and latency', async () => {
    const { palaver, get } = await start();
    const turn = await palaver.chat({ userId: 'ann', text: 'order?' });

    const plain = transcript.parse((await get(`/admin/conversations/${turn.sessionId}/transcript`)).body);
    expect(plain.conversation.sessionId).toBe(turn.sessionId);
    expect(plain.messages.map((message) => [message.role, message.author, message.text])).toEqual([
      ['user', 'person', 'order?'],
      ['assistant', 'agent', turn.text],
    ]);
    expect(plain.messages[1]).toMatchObject({ model: 'scripted', cost: turn.usage.cost, correlationId: turn.correlationId });

    const audited = transcript.parse((await get(`/admin/conversations/${turn.sessionId}/transcript?audit=1`)).body);
    const tool = audited.messages.find((message) => message.role === 'tool');
    expect(tool).toMatchObject({ audience: 'audit', author: 'agent' });
    expect(tool?.toolCalls).toEqual([
      {
        callId: expect.any(String),
        name: 'lookup',
        arguments: '{"id":7}',
        status: 'succeeded',
        result: expect.stringContaining('shipped'),
        latencyMs: expect.any(Number),
        error: null,
      },
    ]);
    expect(tool!.toolCalls![0]!.latencyMs).toBeGreaterThanOrEqual(0);
    expect(audited.messages.map((message) => message.seq)).toEqual([...audited.messages.map((message) => message.seq)].sort((a, b) => a - b));
    expect((await get(`/admin/conversations/${turn.sessionId}/transcript?audit=1&limit=1`)).body['messages'].map((m: any) => m.text)).toEqual([turn.text]);

    expect((await get(`/admin/conversations/${turn.sessionId}`)).body).toMatchObject({ sessionId: turn.sessionId, channel: 'api', conversationId: 'ann' });
    expect((await get('/admin/conversations/no-such-session')).status).toBe(404);
    expect((await get('/admin/conversations/no-such-session/transcript')).status).toBe(404);
  });

  it('shows a turn running while its model answers, and the overview of inbox and outbox', async () => {
    let entered!: () => void;
    const inModel = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const { palaver, get } = await start(orderScript({ entered, release: new Promise<void>((resolve) => (release = resolve)) }));

    const reply = palaver.chat({ userId: 'ann', text: 'hold' });
    await inModel;
    const live = liveTurns.parse((await get('/admin/turns/live')).body);
    expect(live.turns).toEqual([
      {
        sessionId: expect.any(String),
        channel: 'api',
        conversationId: 'ann',
        userId: expect.any(String),
        state: 'running',
        messages: 1,
        oldestAt: expect.any(String),
      },
    ]);
    expect(overview.parse((await get('/admin/overview')).body)).toEqual({
      inbox: { waiting: 0, running: 1, paused: 0 },
      outbox: { pending: 0, failed: 0 },
      toolStream: null,
    });
    expect((await get(`/admin/conversations/${live.turns[0]!.sessionId}`)).body['waiting']).toBe(1);
    release();
    await reply;
    expect((await get('/admin/turns/live')).body).toEqual({ turns: [] });
    expect((await get('/admin/overview')).body['inbox']).toEqual({ waiting: 0, running: 0, paused: 0 });
  });

  it('lists a paused conversation with its held message, and marks a message an operator sent as the operator’s', async () => {
    const { palaver, server, get } = await start();
    const first = await palaver.chat({ userId: 'ann', text: 'thanks' });
    const post = (path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: admin, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    expect((await post(`/admin/conversations/${first.sessionId}/pause`)).status).toBe(200);
    // Stored, not answered while paused: the chat's reply comes after the resume.
    const held = palaver.chat({ userId: 'ann', text: 'are you there?' });
    await expect
      .poll(async () => liveTurns.parse((await get('/admin/turns/live')).body).turns)
      .toMatchObject([{ sessionId: first.sessionId, state: 'paused', messages: 1 }]);
    expect((await get('/admin/overview')).body['inbox']).toEqual({ waiting: 0, running: 0, paused: 1 });
    const paused = conversationsPage.parse((await get('/admin/conversations?paused=true')).body).conversations;
    expect(paused).toMatchObject([{ sessionId: first.sessionId, paused: true, waiting: 1, lastMessage: { role: 'assistant', text: 'You are welcome.' } }]);
    expect((await get('/admin/conversations?paused=false')).body['conversations']).toEqual([]);
    expect((await post(`/admin/conversations/${first.sessionId}/resume`)).status).toBe(200);
    const answered = await held;
    expect(answered.text).toBe('You are welcome.');
    expect((await get('/admin/turns/live')).body).toEqual({ turns: [] });

    expect((await post(`/admin/conversations/${first.sessionId}/messages`, { text: 'An operator here.' })).status).toBe(202);
    const messages = transcript.parse((await get(`/admin/conversations/${first.sessionId}/transcript`)).body).messages;
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', author: 'operator', text: 'An operator here.', model: null, cost: '0' });
    // A message sent by an operator is no turn and costs nothing.
    expect(costs.parse((await get(`/admin/costs?by=conversation&sessionId=${first.sessionId}`)).body).rows).toMatchObject([
      { turns: 2, cost: addCosts(first.usage.cost, answered.usage.cost) },
    ]);
    expect(addCosts(first.usage.cost, answered.usage.cost)).toBe('0.0009');
  });

  it('refuses invalid queries with 400 naming the parameter, and answers only the admin token', async () => {
    const { get, server } = await start();
    for (const [path, parameter] of [
      ['/admin/users?limit=0', 'limit'],
      ['/admin/users?limit=many', 'limit'],
      ['/admin/users?cursor=not-ours', 'cursor'],
      ['/admin/conversations?status=sleeping', 'status'],
      ['/admin/conversations?paused=maybe', 'paused'],
      ['/admin/costs?by=week', 'by'],
      ['/admin/costs?from=yesterday', 'from'],
      ['/admin/conversations/x/transcript?audit=yes', 'audit'],
    ] as const) {
      const answer = await get(path);
      expect(answer.status, path).toBe(400);
      expect(answer.body['error']['code'], path).toBe('invalid_request');
      expect(answer.body['error']['message'], path).toContain(parameter);
    }
    for (const path of ['/admin/users', '/admin/conversations', '/admin/costs', '/admin/turns/live', '/admin/overview']) {
      expect((await fetch(`${server.url}${path}`)).status, path).toBe(401);
    }
  });
});
