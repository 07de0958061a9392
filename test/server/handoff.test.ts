import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { TELEGRAM_BOT_CHANNEL } from '../../src/channels/telegram-bot/address.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { type AguiEvent, AguiView } from '../channels/agui-client.js';
import { events, newVisitor, postRun, runInput, shownText } from '../security/attack-kit.js';
import { createHarness, lastUserText, userTexts, type Harness } from '../support/palaver-harness.js';
import { createTestMariadbDatabase } from '../support/mariadb.js';
import { createTestPostgresDatabase } from '../support/postgres.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { createTelegramRig, inboxState, logsWith, type TelegramRig } from '../telegram/telegram-support.js';

let rig: TelegramRig | undefined;
let harness: Harness | undefined;
afterEach(async () => {
  await rig?.close();
  await harness?.close();
  rig = harness = undefined;
});

const EN_NOTICE = 'I have passed our conversation to a person from our team. They will answer you here.';
const RU_NOTICE = 'Ваш разговор передан сотруднику нашей команды. Вам ответят здесь.';

/** A model that hands over when asked for a human (if it has the tool), and otherwise answers. */
function handingOverModel(call: ScriptedCall) {
  const said = lastUserText(call) ?? '';
  if (call.toolNames.includes('handoff') && /human|человек/i.test(said) && !call.messages.some((item) => item.type === 'tool_result'))
    return { text: 'One moment…', toolCalls: [{ name: 'handoff', arguments: { reason: 'the person asks for a human' } }] };
  return { text: `answered: ${said}` };
}

async function sessionOf(palaver: Palaver, chatId: number): Promise<string> {
  const session = await palaver.store.sessions.findByConversation(TELEGRAM_BOT_CHANNEL, String(chatId));
  if (!session) throw new Error(`no session for chat ${chatId}`);
  return session.id;
}

describe('the agent hands over to a person', () => {
  it('tells the person in their language that a person will answer, asks the model no more, pauses the agent and opens the handoff', async () => {
    // The roles' allowlists do not name the tool: it is offered all the same.
    rig = await createTelegramRig(handingOverModel, { quietWindowMs: 100 }, { config: { agent: { tools: ['handoff'] }, roles: { withoutRole: [] } } });
    const { telegram, harness: h, palaver } = rig;
    telegram.sendText({ chatId: 5, text: 'позовите живого человека', from: { id: 5, is_bot: false, first_name: 'Оля', language_code: 'ru' } });
    telegram.sendText({ chatId: 6, text: 'I want a human', from: { id: 6, is_bot: false, first_name: 'Ann', language_code: 'en' } });
    expect((await telegram.waitForMessages(1, { chatId: 5 }))[0]!.text).toBe(RU_NOTICE);
    expect((await telegram.waitForMessages(1, { chatId: 6 }))[0]!.text).toBe(EN_NOTICE);
    // One model call each: the one that asked for the handoff; the model is not asked to write after it.
    expect(h.model.calls).toHaveLength(2);
    expect(h.model.calls.every((call) => call.toolNames.includes('handoff'))).toBe(true);

    const sessionId = await sessionOf(palaver, 6);
    const session = await palaver.store.sessions.findById(sessionId);
    expect(session?.pausedAt).not.toBeNull();
    expect(await palaver.store.handoffs.findOpen(sessionId)).toMatchObject({ reason: 'the person asks for a human', source: 'model', takenBy: null });
    const audit = await palaver.store.adminActions.list({ limit: 10 });
    expect(audit.filter((action) => action.sessionId === sessionId).map((action) => [action.action, action.actor, action.details['source']])).toEqual([
      ['handoff', 'agent', 'model'],
    ]);
    // The notice is stored as Palaver's own reply, after the tool's audit record; the model's text beside the call is not.
    const stored = await palaver.store.messages.listRecent(sessionId, { limit: 10 });
    expect(stored.map((message) => [message.role, message.audience, message.content])).toEqual([
      ['user', 'display', 'I want a human'],
      ['tool', 'audit', expect.stringContaining('Handed over')],
      ['assistant', 'display', EN_NOTICE],
    ]);
    expect(logsWith(h, 'conversation handed to a person, waiting for an operator')).toHaveLength(2);
  });

  it('on the web, withdraws what the model streamed beside the call: the page shows only the notice', async () => {
    harness = await createHarness(handingOverModel);
    const palaver = await harness.start({ agent: { tools: ['handoff'] } });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    try {
      const visitor = await newVisitor(server.url);
      const run = await postRun(server.url, runInput('t-web-hand', 'I want a human'), { cookie: visitor.cookie });
      const page = new AguiView();
      for (const event of events(run)) page.apply('r1', event as AguiEvent);
      // The model's words beside the call were streamed, then withdrawn.
      expect(shownText(run)).toContain('One moment…');
      expect(events(run).some((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.discard')).toBe(true);
      expect(page.messages.map((message) => message.text)).toEqual([EN_NOTICE]);
      expect(harness.model.calls).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('holds what the person writes while handed over, also after a restart: stored, never answered by the agent', async () => {
    rig = await createTelegramRig(handingOverModel, { quietWindowMs: 100 }, { config: { agent: { tools: ['handoff'] } } });
    const { telegram, harness: h } = rig;
    telegram.sendText({ chatId: 8, text: 'a human please' });
    await telegram.waitForMessages(1, { chatId: 8 });
    const sessionId = await sessionOf(rig.palaver, 8);
    telegram.sendText({ chatId: 8, text: 'hello? anyone?' });
    await expect.poll(() => logsWith(h, 'conversation paused by an operator: messages stored, held until it is resumed').length).toBe(1);
    await rig.palaver.close();

    const second = await rig.start();
    telegram.sendText({ chatId: 8, text: 'still here' });
    await expect.poll(() => inboxState(h)).toMatchObject({ received: 3, queued: 2 });
    await expect.poll(() => logsWith(h, 'conversation paused by an operator: messages stored, held until it is resumed').length).toBeGreaterThanOrEqual(2);
    expect((await second.store.inbound.listQueued(sessionId)).map((record) => record.text)).toEqual(['hello? anyone?', 'still here']);
    expect(telegram.sentTo(8)).toHaveLength(1);
    expect(h.model.calls).toHaveLength(1);
  });

  it("hands over when a tool calls ctx.handoff: the turn stops after that round with Palaver's notice (source tool)", async () => {
    harness = await createHarness((call) =>
      call.messages.some((item) => item.type === 'tool_result')
        ? { text: 'this should never be asked for' }
        : { toolCalls: [{ name: 'refund', arguments: { amount: 900 } }] },
    );
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds an order',
      input: z.object({ amount: z.number() }),
      run: ({ amount }, ctx) => {
        if (amount > 500) ctx.handoff({ reason: `refund of ${amount} EUR is above what the agent may grant` });
        return amount > 500 ? 'A person decides refunds this large.' : 'Refunded.';
      },
    });
    const palaver = await harness.start({}, { tools: [refund] });
    const reply = await palaver.chat({ userId: 'ada', text: 'refund my 900 EUR order' });
    expect(reply.text).toBe(EN_NOTICE);
    expect(harness.model.calls).toHaveLength(1);
    // Without agent.tools the model is not given the built-in tool.
    expect(harness.model.calls[0]!.toolNames).toEqual(['refund']);
    expect(await palaver.store.handoffs.findOpen(reply.sessionId)).toMatchObject({
      reason: 'refund of 900 EUR is above what the agent may grant',
      source: 'tool',
    });
    expect((await palaver.store.sessions.findById(reply.sessionId))?.pausedAt).not.toBeNull();
  });
});

describe('handoff phrases', () => {
  it('hands over on a phrase in the newest message (whole words, any case; a substring in Chinese) without calling the model', async () => {
    harness = await createHarness((call) => ({ text: `answered: ${lastUserText(call)}` }));
    const palaver = await harness.start({ operators: { handoff: { phrases: ['operator', 'живой человек', '人工客服'] } } });
    expect((await palaver.chat({ userId: 'coop', text: 'I am a cooperator' })).text).toBe('answered: I am a cooperator');
    const calls = harness.model.calls.length;

    const english = await palaver.chat({ userId: 'ann', text: 'Can I talk to an OPERATOR, please?' });
    expect(english.text).toBe(EN_NOTICE);
    expect(await palaver.store.handoffs.findOpen(english.sessionId)).toMatchObject({ reason: 'operator', source: 'phrase' });
    const russian = await palaver.chat({ userId: 'olia', text: 'Мне нужен Живой   человек!' });
    expect(await palaver.store.handoffs.findOpen(russian.sessionId)).toMatchObject({ reason: 'живой человек', source: 'phrase' });
    const chinese = await palaver.chat({ userId: 'li', text: '我要人工客服' });
    expect(await palaver.store.handoffs.findOpen(chinese.sessionId)).toMatchObject({ reason: '人工客服', source: 'phrase' });
    expect(harness.model.calls).toHaveLength(calls);
  });
});

describe('working hours in the notice', () => {
  const hours = { timeZone: 'Europe/Kyiv', days: { mon: '09:00-18:00', tue: '09:00-18:00' } };

  it('says "shortly" within the hours, and when the next hours begin outside them, in the person\'s time zone', async () => {
    harness = await createHarness(() => ({ text: 'unused' }));
    const config = { operators: { hours, handoff: { phrases: ['operator'] } }, agent: { timezone: 'America/New_York' } };
    // Monday 13:00 in Kyiv.
    const within = await harness.start(config, { now: () => new Date('2026-06-15T10:00:00Z') });
    expect((await within.chat({ userId: 'ann', text: 'operator' })).text).toBe(
      'I have passed our conversation to a person from our team. They will answer you here shortly.',
    );
    await within.close();
    // Tuesday 19:00 in Kyiv: the next hours begin Monday 09:00 Kyiv, 02:00 in New York.
    const outside = await harness.start(config, { now: () => new Date('2026-06-16T16:00:00Z') });
    expect((await outside.chat({ userId: 'bob', text: 'operator' })).text).toBe(
      'I have passed our conversation to a person from our team. They will answer you here when our working hours begin: Monday, June 22 at 02:00 EDT.',
    );
  });
});

/** The admin API of a running Palaver over real HTTP, as the named operator. */
function adminAt(base: string) {
  return async (method: string, path: string, options: { body?: unknown; actor?: string; raw?: string } = {}) => {
    const response = await fetch(`${base}/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TEST_SECRETS.adminToken}`,
        'content-type': 'application/json',
        ...(options.actor === undefined ? {} : { 'x-palaver-actor': options.actor }),
      },
      ...(options.raw !== undefined ? { body: options.raw } : options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
}

/** A web page's conversation events, read as they arrive: `next(type)` waits for the next event of that type. */
async function pageEvents(base: string, threadId: string, cookie: string, abort: AbortController) {
  const response = await fetch(`${base}/conversations/events?id=${encodeURIComponent(threadId)}`, { headers: { cookie }, signal: abort.signal });
  expect(response.status).toBe(200);
  const seen: Record<string, unknown>[] = [];
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith('data: ')) seen.push(JSON.parse(block.slice(6)) as Record<string, unknown>);
        }
      }
    } catch {
      // aborted at the end of the test
    }
  })();
  let read = 0;
  return {
    async next(type: string): Promise<Record<string, unknown>> {
      await expect.poll(() => seen.findIndex((event, index) => index >= read && event['type'] === type)).toBeGreaterThanOrEqual(0);
      const index = seen.findIndex((event, i) => i >= read && event['type'] === type);
      read = index + 1;
      return seen[index]!;
    },
  };
}

describe('operators take a conversation and hand it back', () => {
  const databases = {
    sqlite: async () => ({ url: undefined, drop: async () => {} }),
    postgres: createTestPostgresDatabase,
    mariadb: createTestMariadbDatabase,
  };
  for (const [dialect, createDatabase] of Object.entries(databases)) {
    it(`lets one of two operators taking a conversation at once have it; the other is told who has it (409) unless forced; the audit names each (${dialect})`, async () => {
      const database = await createDatabase();
      harness = await createHarness(() => ({ text: 'unused' }));
      const config = {
        server: { adminToken: TEST_SECRETS.adminToken },
        operators: { handoff: { phrases: ['operator'] } },
        ...(database.url === undefined ? {} : { database: { url: database.url } }),
      };
      const palaver = await harness.start(config);
      // On a shared database the two operators reach two processes; SQLite's file has one.
      const other = database.url === undefined ? palaver : await harness.start(config);
      const servers = [await palaver.serve({ host: '127.0.0.1', port: 0 }), ...(other === palaver ? [] : [await other.serve({ host: '127.0.0.1', port: 0 })])];
      try {
        const admin = adminAt(servers[0]!.url);
        const adminB = adminAt(servers.at(-1)!.url);
        const { sessionId } = await palaver.chat({ userId: 'ann', text: 'operator!' });
        expect((await admin('GET', `/conversations/${sessionId}`)).body).toMatchObject({
          paused: true,
          assignedTo: null,
          handoff: { reason: 'operator', source: 'phrase', takenBy: null },
        });

        const [olena, mark] = await Promise.all([
          admin('POST', `/conversations/${sessionId}/take`, { actor: 'Olena' }),
          adminB('POST', `/conversations/${sessionId}/take`, { actor: 'Mark', body: {} }),
        ]);
        expect([olena.status, mark.status].sort()).toEqual([200, 409]);
        const [winner, loser, refused] = olena.status === 200 ? ['Olena', 'Mark', mark] : ['Mark', 'Olena', olena];
        expect((olena.status === 200 ? olena : mark).body).toEqual({ sessionId, assignedTo: winner, changed: true, paused: true });
        expect(refused.body['error']).toMatchObject({ code: 'conflict', assignedTo: winner, message: expect.stringContaining(winner) });
        expect(await palaver.store.handoffs.findOpen(sessionId)).toMatchObject({ takenBy: winner, nextNoticeAt: null });
        const summary = (await admin('GET', '/conversations?limit=5')).body['conversations'].find((entry: any) => entry.sessionId === sessionId);
        expect(summary).toMatchObject({
          assignedTo: winner,
          handoff: { reason: 'operator', source: 'phrase', requestedAt: expect.any(String), takenBy: winner },
        });

        // Taking one's own again changes nothing; the other takes it over only when forced.
        expect((await admin('POST', `/conversations/${sessionId}/take`, { actor: winner })).body).toMatchObject({ assignedTo: winner, changed: false });
        expect((await adminB('POST', `/conversations/${sessionId}/take`, { actor: loser, body: { force: true } })).body).toMatchObject({
          assignedTo: loser,
          changed: true,
        });
        expect((await admin('POST', `/conversations/${sessionId}/take`, { raw: '{"force":"yes"}' })).status).toBe(400);
        expect((await admin('POST', '/conversations/no-such-session/take', { actor: loser })).status).toBe(404);

        const audit = (await admin('GET', '/actions?limit=10')).body['actions'].filter((action: any) => action.sessionId === sessionId);
        expect(audit.map((action: any) => [action.action, action.actor, action.details['changed'], action.details['from']])).toEqual([
          ['take', loser, true, winner],
          ['take', winner, false, undefined],
          ['take', winner, true, undefined],
          ['handoff', 'agent', undefined, undefined],
        ]);
      } finally {
        for (const server of servers) await server.close();
        await harness.close();
        harness = undefined;
        await database.drop();
      }
    });
  }

  it("hands it back with a note: the agent's next turn reads it, the person never sees it; the web page shows the pause and the resume", async () => {
    harness = await createHarness((call) => ({ text: `echo: ${lastUserText(call)}` }));
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, operators: { handoff: { phrases: ['operator'] } } });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    const abort = new AbortController();
    try {
      const admin = adminAt(server.url);
      const visitor = await newVisitor(server.url);
      expect(shownText(await postRun(server.url, runInput('t-hand', 'my refund is late'), { cookie: visitor.cookie }))).toBe('echo: my refund is late');
      const page = await pageEvents(server.url, 't-hand', visitor.cookie, abort);
      expect(await page.next('state')).toEqual({ type: 'state', paused: false });

      // The phrase hands over: the run shows the notice, and the open page learns a person answers now.
      expect(shownText(await postRun(server.url, runInput('t-hand', 'an operator, please'), { cookie: visitor.cookie }))).toBe(EN_NOTICE);
      expect(await page.next('paused')).toEqual({ type: 'paused', paused: true });
      const held = await postRun(server.url, runInput('t-hand', 'is anyone there?'), { cookie: visitor.cookie });
      expect(events(held).at(-1)).toMatchObject({ type: 'RUN_FINISHED', result: { status: 'held' } });
      const calls = harness.model.calls.length;

      const sessionId = (await palaver.store.sessions.findByConversation('web', 't-hand'))!.id;
      expect((await admin('POST', `/conversations/${sessionId}/take`, { actor: 'Olena' })).status).toBe(200);
      expect((await admin('POST', `/conversations/${sessionId}/resume`, { actor: 'Olena', body: { note: '' } })).status).toBe(400);
      expect((await admin('POST', `/conversations/${sessionId}/resume`, { actor: 'Olena', raw: 'not json' })).status).toBe(400);
      const note = 'Refund of 900 EUR approved; it arrives within 3 days.';
      const resumed = await admin('POST', `/conversations/${sessionId}/resume`, { actor: 'Olena', body: { note } });
      expect(resumed.body).toEqual({ sessionId, paused: false, changed: true, answering: 1 });
      expect(await page.next('paused')).toEqual({ type: 'paused', paused: false });
      expect(await page.next('reply')).toMatchObject({ type: 'reply', text: 'echo: is anyone there?' });

      // The held message's turn: one model call, which read the note as hidden context.
      expect(harness.model.calls).toHaveLength(calls + 1);
      const next = harness.model.calls.at(-1)!;
      expect(next.instructions).toContain(`Note from operator Olena (for you only, not shown to the person): ${note}`);
      expect(next.messages.some((item) => item.type === 'message' && item.content.includes(note))).toBe(false);

      // The person's transcript (a reload) does not show it; the operators' does, as the operator's.
      const shown = (await (await fetch(`${server.url}/conversations/messages?id=t-hand`, { headers: { cookie: visitor.cookie } })).json()) as {
        paused: boolean;
        messages: { text: string }[];
      };
      expect(shown.paused).toBe(false);
      expect(shown.messages.map((message) => message.text)).toEqual([
        'my refund is late',
        'echo: my refund is late',
        'an operator, please',
        EN_NOTICE,
        'is anyone there?',
        'echo: is anyone there?',
      ]);
      const operators = (await admin('GET', `/conversations/${sessionId}/transcript`)).body;
      expect(operators['messages'].find((message: any) => message.text === note)).toMatchObject({ role: 'system', author: 'operator' });
      expect(operators['conversation']).toMatchObject({ paused: false, assignedTo: null, handoff: null });
      expect(await palaver.store.handoffs.findOpen(sessionId)).toBeUndefined();
      const audit = (await admin('GET', '/actions?limit=3')).body['actions'];
      expect(audit[0]).toMatchObject({
        action: 'resume',
        actor: 'Olena',
        details: { changed: true, handoffId: expect.any(String), noteId: expect.any(String) },
      });
    } finally {
      abort.abort();
      await server.close();
    }
  });

  it('closes the handoff when an operator ends the conversation', async () => {
    harness = await createHarness(() => ({ text: 'unused' }));
    const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken }, operators: { handoff: { phrases: ['operator'] } } });
    const { sessionId } = await palaver.chat({ userId: 'ann', text: 'operator' });
    expect((await palaver.operators.take(sessionId, { actor: 'Olena', requestId: null })).ok).toBe(true);
    expect((await palaver.operators.end(sessionId, { actor: 'Olena', requestId: null })).ok).toBe(true);
    expect(await palaver.store.handoffs.findOpen(sessionId)).toBeUndefined();
    expect((await palaver.store.sessions.findById(sessionId))?.assignedTo).toBeNull();
  });
  it('hands an ended conversation back to the agent: what the person wrote while waiting is answered once, in a fresh context', async () => {
    rig = await createTelegramRig(
      (call) => ({ text: `fresh: ${userTexts(call).join(' | ')}` }),
      { quietWindowMs: 100 },
      {
        config: { operators: { handoff: { phrases: ['operator'] } } },
      },
    );
    const { telegram, harness: h, palaver } = rig;
    telegram.sendText({ chatId: 9, text: 'an operator please' });
    expect((await telegram.waitForMessages(1, { chatId: 9 }))[0]!.text).toBe(EN_NOTICE);
    const sessionId = await sessionOf(palaver, 9);
    telegram.sendText({ chatId: 9, text: 'my parcel is here after all' });
    await expect.poll(() => logsWith(h, 'conversation paused by an operator: messages stored, held until it is resumed').length).toBe(1);
    expect((await palaver.operators.take(sessionId, { actor: 'Olena', requestId: null })).ok).toBe(true);

    expect((await palaver.operators.end(sessionId, { actor: 'Olena', requestId: null })).ok).toBe(true);
    expect((await palaver.store.sessions.findById(sessionId))?.pausedAt).toBeNull();
    const replies = await telegram.waitForMessages(2, { chatId: 9 });
    expect(replies[1]!.text).toBe('fresh: my parcel is here after all');
    await expect.poll(() => inboxState(h)).toMatchObject({ received: 2, queued: 0, pendingParts: 0 });
    expect(h.model.calls).toHaveLength(1);
    const audit = await palaver.store.adminActions.list({ limit: 1 });
    expect(audit[0]).toMatchObject({ action: 'end', actor: 'Olena', details: { handoffId: expect.any(String), resumed: true } });
  });
});
