import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { startFakeTelegram, type FakeTelegram, type ScriptedCall } from '../../src/testing/index.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { TEST_SECRETS } from '../support/secrets.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

// Issue 39 end to end, as its users see it: a person on Telegram (the real grammY client against the fake Bot API),
// two Palaver processes (two app instances, each with its own pool, bus connection and HTTP port) on one PostgreSQL
// database, the scripted model over real HTTP, operators told by a signed webhook (checked as the docs tell a
// receiver to) and in their Telegram chat, and an operator account acting through the admin API of the process that
// did not run the turn. One clock for both processes, moved forward by hand to pass the notices' repeat time.

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OPERATORS_CHAT = -1_000_555;
const MINUTE = 60_000;
const PERSON = { id: 41, is_bot: false, first_name: 'Оксана', language_code: 'uk' } as const;
/** A second person, handed over too and never taken: their repeat notice shows the notifiers looked after the clock moved. */
const CONTROL = { id: 42, is_bot: false, first_name: 'Ann', language_code: 'en' } as const;
const UK_NOTICE = 'Вашу розмову передано співробітнику нашої команди. Вам відповідять тут.';
const REASON = 'the parcel never came and the person asks for a human';
const OPERATOR_TEXT = 'Доброго дня! Я Олена, вже перевіряю вашу посилку.';
const NOTE = 'Refund of 900 UAH approved by the team; tell her it arrives within 3 days.';

/** Hands over when the person asks for a human (once per request: never after a tool result), else answers. */
function script(call: ScriptedCall) {
  const said = lastUserText(call) ?? '';
  if (call.toolNames.includes('handoff') && /людин|human/i.test(said) && !call.messages.some((item) => item.type === 'tool_result'))
    return { text: 'Зачекайте…', toolCalls: [{ name: 'handoff', arguments: { reason: REASON } }] };
  return { text: `answered: ${said}` };
}

interface Process {
  readonly label: string;
  readonly palaver: Palaver;
  readonly url: string;
}

let harness: Harness | undefined;
let telegram: FakeTelegram | undefined;
let receiver: WebhookReceiver | undefined;
let database: TestPostgresDatabase | undefined;
const servers: RunningHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await harness?.close();
  await telegram?.close();
  await receiver?.close();
  await database?.drop();
  harness = telegram = receiver = database = undefined;
});

/** Milliseconds both processes' clock is ahead of the wall clock. */
let skew = 0;

async function startProcesses(): Promise<{ a: Process; b: Process }> {
  skew = 0;
  database = await createTestPostgresDatabase();
  receiver = await startWebhookReceiver(SECRET);
  telegram = await startFakeTelegram();
  harness = await createHarness(script);
  const fake = telegram;
  const start = async (label: string): Promise<Process> => {
    const palaver = await harness!.start(
      {
        // Each process names itself to the model, so a request tells which process made it.
        model: { name: `scripted@${label}` },
        database: { url: database!.url },
        server: { adminToken: TEST_SECRETS.adminToken },
        agent: { tools: ['handoff'] },
        channels: {
          web: { enabled: false },
          // Each process calls the fake through its own root, so its call log tells them apart.
          telegram: { token: fake.token, apiRoot: `${fake.apiRoot}/via/${label}`, quietWindowMs: 100, drafts: false },
        },
        operators: {
          dashboardUrl: 'https://support.example.com',
          notify: { webhookUrl: receiver!.url, webhookSecret: SECRET, telegramChatId: OPERATORS_CHAT, repeatMinutes: 10, repeats: 2 },
        },
      },
      { now: () => new Date(Date.now() + skew) },
    );
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    servers.push(server);
    return { label, palaver, url: server.url };
  };
  const a = await start('a');
  // A polls; B stands by (it still runs the bot: it sends what it delivers, and it can post to the operators' chat).
  await telegram.waitForCall('getUpdates', (call) => call.via === 'a');
  const b = await start('b');
  return { a, b };
}

async function call(base: string, method: 'GET' | 'POST', path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${base}/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? TEST_SECRETS.adminToken}`,
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** The webhook notices about one conversation. */
const noticesOf = (sessionId: string): ReceivedWebhook[] => receiver!.received.filter((notice) => notice.json['sessionId'] === sessionId);
/** The messages in the operators' Telegram chat about one person. */
const chatNoticesOf = (name: string) => telegram!.sentTo(OPERATORS_CHAT).filter((message) => message.text.startsWith(`🙋 A person is wanted: ${name} `));

/** The process whose request the model saw last for this chat's person, by the model name each process sends. */
function processOfLastCall(said: string): string {
  const request = harness!.model.calls.findLast((call) => lastUserText(call) === said);
  if (!request) throw new Error(`the model saw no request ending with "${said}"`);
  return request.model.split('@')[1]!;
}

describe('a conversation handed to a person, end to end, with two processes on one PostgreSQL database', () => {
  it('the agent hands over, operators are told once, an operator account takes it on the other process, writes, and hands it back with a note', async () => {
    const { a, b } = await startProcesses();
    const fake = telegram!;
    const model = harness!.model;

    // The person asks for a human: the model calls the built-in handoff tool, the person is told in Ukrainian.
    const asked = 'Посилка так і не прийшла. Мені потрібна людина.';
    fake.sendText({ chatId: PERSON.id, from: PERSON, text: asked });
    expect((await fake.waitForMessages(1, { chatId: PERSON.id, timeoutMs: 15_000 }))[0]!.text).toBe(UK_NOTICE);
    expect(model.calls).toHaveLength(1);
    const turnRanOn = processOfLastCall(asked);
    // The operator works on the process that did not run the turn.
    const other = turnRanOn === 'a' ? b : a;
    const session = await other.palaver.store.sessions.findByConversation('telegram-bot', String(PERSON.id));
    const sessionId = session!.id;

    // Operators are told: one signed webhook POST and one message in their Telegram chat.
    await expect.poll(() => noticesOf(sessionId).length, { timeout: 10_000 }).toBe(1);
    const [notice] = noticesOf(sessionId);
    expect(notice!.verified).toBe(true);
    expect(notice!.json).toMatchObject({
      type: 'handoff.requested',
      round: 1,
      sessionId,
      channel: 'telegram-bot',
      reason: REASON,
      source: 'model',
      person: { name: 'Оксана' },
      lastMessages: [
        { role: 'user', text: asked },
        { role: 'assistant', text: UK_NOTICE },
      ],
      url: `https://support.example.com/admin#/conversations/${sessionId}`,
    });
    const [chatNotice] = await fake.waitForMessages(1, { chatId: OPERATORS_CHAT, timeoutMs: 10_000 });
    expect(chatNotice!.text.split('\n').slice(0, 2)).toEqual(['🙋 A person is wanted: Оксана (telegram-bot)', `Why: ${REASON}`]);

    // The dashboard of the other process lists it, waiting for a person.
    const waiting = await call(other.url, 'GET', '/handoffs');
    expect(waiting.status).toBe(200);
    expect(waiting.json).toMatchObject({
      waiting: 1,
      handoffs: [{ sessionId, channel: 'telegram-bot', person: { name: 'Оксана' }, reason: REASON, source: 'model', takenBy: null, notices: 1 }],
    });

    // The person writes again: stored and held, on whichever process; the model is not asked.
    const heldText = 'Ви тут?';
    fake.sendText({ chatId: PERSON.id, from: PERSON, text: heldText });
    await expect
      .poll(async () => (await other.palaver.store.inbound.listQueued(sessionId)).map((record) => record.text), { timeout: 10_000 })
      .toEqual([heldText]);
    await expect
      .poll(() => harness!.logs.filter((line) => line['msg'] === 'conversation paused by an operator: messages stored, held until it is resumed').length)
      .toBe(1);
    expect(model.calls).toHaveLength(1);

    // An operator account, made with the admin token; Olena acts with her own token from here on.
    const added = await call(other.url, 'POST', '/operators', { body: { name: 'Olena', role: 'operator' } });
    expect(added.status).toBe(201);
    const olena = { token: added.json['token'] as string, id: (added.json['operator'] as { id: string }).id };

    const taken = await call(other.url, 'POST', `/conversations/${sessionId}/take`, { token: olena.token });
    expect(taken).toEqual({ status: 200, json: { sessionId, assignedTo: 'Olena', changed: true, paused: true } });
    expect((await call(other.url, 'GET', '/handoffs', { token: olena.token })).json).toMatchObject({ waiting: 0, handoffs: [{ sessionId, takenBy: 'Olena' }] });

    // Taken: no repeat notice once repeatMinutes pass. Ann, handed over and left untaken, is the control: her repeat
    // arriving shows the notifiers looked for due rounds after the clock moved.
    fake.sendText({ chatId: CONTROL.id, from: CONTROL, text: 'I need a human' });
    await fake.waitForMessages(1, { chatId: CONTROL.id, timeoutMs: 15_000 });
    const control = (await other.palaver.store.sessions.findByConversation('telegram-bot', String(CONTROL.id)))!.id;
    await expect.poll(() => noticesOf(control).length, { timeout: 10_000 }).toBe(1);
    skew += 11 * MINUTE;
    await expect.poll(() => noticesOf(control).map((request) => request.json['round']), { timeout: 15_000 }).toEqual([1, 2]);
    await expect.poll(() => chatNoticesOf('Ann').length, { timeout: 10_000 }).toBe(2);
    expect(noticesOf(sessionId)).toHaveLength(1);
    expect(chatNoticesOf('Оксана')).toHaveLength(1);

    // Olena writes to the person: it reaches them through the bot.
    const sent = await call(other.url, 'POST', `/conversations/${sessionId}/messages`, {
      token: olena.token,
      body: { text: OPERATOR_TEXT },
      headers: { 'idempotency-key': 'olena-1' },
    });
    expect(sent.status).toBe(202);
    expect((await fake.waitForMessages(2, { chatId: PERSON.id, timeoutMs: 10_000 }))[1]!.text).toBe(OPERATOR_TEXT);

    // She hands it back with a note: the held message is answered once, the model reads the note, the person does not.
    const resumed = await call(other.url, 'POST', `/conversations/${sessionId}/resume`, { token: olena.token, body: { note: NOTE } });
    expect(resumed).toMatchObject({ status: 200, json: { sessionId, paused: false, changed: true } });
    // This process takes the held message at once, unless the other one's recovery round took it first: either way it
    // is answered once (below).
    expect([0, 1]).toContain((resumed.json as { answering: number }).answering);
    const replies = await fake.waitForMessages(3, { chatId: PERSON.id, timeoutMs: 15_000 });
    expect(replies[2]!.text).toBe(`answered: ${heldText}`);
    const answering = model.calls.filter((request) => lastUserText(request) === heldText);
    expect(answering).toHaveLength(1);
    expect(JSON.stringify(answering[0]!.body)).toContain(`Note from operator Olena (for you only, not shown to the person): ${NOTE}`);
    // The model also reads Olena's message as the agent's own words.
    expect(JSON.stringify(answering[0]!.body)).toContain(OPERATOR_TEXT);

    // Settled: nothing queued, every reply part sent; the person saw the notice, Olena's words and one answer.
    await expect
      .poll(async () => ({
        queued: (await other.palaver.store.inbound.listQueued(sessionId)).length,
        handoff: (await other.palaver.store.handoffs.findOpen(sessionId)) ?? null,
        paused: (await other.palaver.store.sessions.findById(sessionId))?.pausedAt ?? null,
      }))
      .toEqual({ queued: 0, handoff: null, paused: null });
    expect(fake.sentTo(PERSON.id).map((message) => message.text)).toEqual([UK_NOTICE, OPERATOR_TEXT, `answered: ${heldText}`]);
    expect(fake.sentTo(PERSON.id).some((message) => message.text.includes(NOTE))).toBe(false);
    expect((await call(other.url, 'GET', '/handoffs')).json).toMatchObject({ handoffs: [{ sessionId: control, takenBy: null }] });

    // The audit names who did what: the agent handed over, Olena (her account) took, wrote and handed back.
    const audit = await call(turnRanOn === 'a' ? a.url : b.url, 'GET', '/actions?limit=50');
    const actions = (audit.json['actions'] as Array<{ action: string; actor: string; operatorId: string | null; sessionId: string | null }>)
      .filter((action) => action.sessionId === sessionId)
      .reverse();
    expect(actions.map((action) => [action.action, action.actor, action.operatorId])).toEqual([
      ['handoff', 'agent', null],
      ['take', 'Olena', olena.id],
      ['send', 'Olena', olena.id],
      ['resume', 'Olena', olena.id],
    ]);
  }, 90_000);
});
