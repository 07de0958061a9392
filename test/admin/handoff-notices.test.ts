import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HandoffNotifier, WebhookNotices, type NoticeVia } from '../../src/admin/handoff-notices/index.js';
import type { Session } from '../../src/domain/model.js';
import type { Handoff, Store } from '../../src/domain/ports/store.js';
import { silentLogger } from '../../src/observability/logger.js';
import { openStore } from '../../src/store/index.js';
import { createTestPostgresDatabase } from '../support/postgres.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Operators are told once per round, however many processes race for it: two notifiers, each on its own store (its
// own connections) on one database, a real HTTP receiver that checks every signature, and a fake clock for repeats.

/** A secret as Standard Webhooks libraries make them: a receiver can hand it to one as it is. */
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const MINUTE = 60_000;
const START = Date.parse('2026-11-27T10:00:00Z');

interface Database {
  open(): Promise<Store>;
  drop(): Promise<void>;
}

async function sqliteFile(): Promise<Database> {
  const dir = await mkdtemp(join(tmpdir(), 'palaver-notices-'));
  const url = `sqlite:${join(dir, 'palaver.db')}`;
  await (await openStore(url)).close();
  return { open: () => openStore(url), drop: () => rm(dir, { recursive: true, force: true }) };
}

async function postgres(): Promise<Database> {
  const database = await createTestPostgresDatabase();
  await (await openStore(database.url)).close();
  return { open: () => openStore(database.url, { migrate: false }), drop: () => database.drop() };
}

describe.each([
  ['one SQLite file', sqliteFile],
  ['PostgreSQL', postgres],
])('handoff notices on %s', (_name, makeDatabase) => {
  let database: Database;
  let receiver: WebhookReceiver;
  let stores: Store[];
  let notifiers: HandoffNotifier[];
  let counted: { via: NoticeVia; outcome: string }[];
  let clock: number;

  beforeAll(async () => {
    database = await makeDatabase();
    receiver = await startWebhookReceiver(SECRET);
  });

  afterAll(async () => {
    await receiver?.close();
    await database?.drop();
  });

  beforeEach(async () => {
    clock = START;
    counted = [];
    receiver.received.length = 0;
    receiver.answerWith(204);
    stores = [await database.open(), await database.open()];
    notifiers = stores.map((store) => notifierOn(store));
  });

  afterEach(async () => {
    await Promise.all(notifiers.map((notifier) => notifier.close()));
    // Each test's handoffs are closed, so that the next test's rounds are its own.
    for (const handoff of await stores[0]!.handoffs.listOpen(1000)) await stores[0]!.handoffs.close(handoff.sessionId, 'test', clock);
    await Promise.all(stores.map((store) => store.close()));
  });

  function notifierOn(store: Store): HandoffNotifier {
    return new HandoffNotifier({
      handoffs: store.handoffs,
      conversations: store.operators,
      ways: [new WebhookNotices({ url: receiver.url, secret: SECRET, fetch: globalThis.fetch, timeoutMs: 5_000 })],
      repeatMinutes: 10,
      repeats: 2,
      dashboardUrl: 'https://support.example.com/',
      logger: silentLogger(),
      count: (via, outcome) => counted.push({ via, outcome }),
      now: () => clock,
    });
  }

  /** A conversation on the Telegram bot with Olena, six messages long, the longest one far past a notice's bound. */
  async function conversation(): Promise<Session> {
    const store = stores[0]!;
    const { user } = await store.users.resolveAccount({ channel: 'telegram-bot', accountId: randomUUID(), displayName: 'Olena' });
    const session = await store.sessions.open({ userId: user.id, channel: 'telegram-bot', conversationId: randomUUID() });
    await store.messages.append(session.id, [
      { role: 'user', audience: 'display', content: 'hello' },
      { role: 'assistant', audience: 'display', content: 'Hi! How can I help?' },
      { role: 'user', audience: 'display', content: 'my parcel never came' },
      { role: 'assistant', audience: 'display', content: 'Let me look: order 7 left on Monday.' },
      { role: 'user', audience: 'display', content: `still nothing ${'!'.repeat(2000)}` },
      { role: 'assistant', audience: 'display', content: 'I am handing you to a colleague.' },
    ]);
    return session;
  }

  async function handOver(session: Session): Promise<Handoff> {
    const { handoff } = await stores[0]!.handoffs.open({
      sessionId: session.id,
      userId: session.userId,
      reason: 'refund the model cannot grant',
      source: 'model',
      at: clock,
    });
    return handoff;
  }

  /** Both notifiers look for due rounds at once, as two processes' timers would. */
  const race = () => Promise.all(notifiers.map((notifier) => notifier.runDue()));

  it('tells operators once per round, with a signed notice, however many processes race for it', async () => {
    const session = await conversation();
    const handoff = await handOver(session);

    // The turn's hook and both timers, all at once.
    await Promise.all([...notifiers.map((notifier) => notifier.notify(handoff)), ...notifiers.map((notifier) => notifier.runDue())]);
    expect(receiver.received).toHaveLength(1);
    const [first] = receiver.received;
    expect(first!.verified).toBe(true);
    expect(first!.path).toBe('/palaver-handoffs');
    expect(first!.headers['content-type']).toBe('application/json');
    expect(first!.headers['webhook-id']).toBe(`${handoff.id}_1`);
    expect(first!.json).toEqual({
      type: 'handoff.requested',
      handoffId: handoff.id,
      round: 1,
      sessionId: session.id,
      userId: session.userId,
      channel: 'telegram-bot',
      reason: 'refund the model cannot grant',
      source: 'model',
      requestedAt: new Date(START).toISOString(),
      person: { name: 'Olena' },
      lastMessages: [
        { role: 'assistant', text: 'Hi! How can I help?', at: expect.any(String) },
        { role: 'user', text: 'my parcel never came', at: expect.any(String) },
        { role: 'assistant', text: 'Let me look: order 7 left on Monday.', at: expect.any(String) },
        { role: 'user', text: `still nothing ${'!'.repeat(500 - 'still nothing '.length - 1)}…`, at: expect.any(String) },
        { role: 'assistant', text: 'I am handing you to a colleague.', at: expect.any(String) },
      ],
      url: `https://support.example.com/admin#/conversations/${session.id}`,
    });
    expect(counted).toEqual([{ via: 'webhook', outcome: 'sent' }]);

    // Not again until the next round is due, then once per round: 1 + repeats rounds in all.
    clock += 10 * MINUTE - 1;
    await race();
    expect(receiver.received).toHaveLength(1);
    for (const round of [2, 3]) {
      clock += round === 2 ? 1 : 10 * MINUTE;
      await race();
      expect(receiver.received.map((request) => request.json['round'])).toEqual([1, 2, 3].slice(0, round));
    }
    clock += 60 * MINUTE;
    await race();
    expect(receiver.received).toHaveLength(3);
    expect(receiver.received.every((request) => request.verified)).toBe(true);
    expect(new Set(receiver.received.map((request) => request.headers['webhook-id'])).size).toBe(3);
    expect((await stores[1]!.handoffs.findOpen(session.id))?.nextNoticeAt).toBeNull();
  });

  it('tells nobody again once an operator took the conversation', async () => {
    const session = await conversation();
    await notifiers[0]!.notify(await handOver(session));
    expect(receiver.received).toHaveLength(1);
    await stores[1]!.handoffs.take(session.id, 'Olena', clock + MINUTE);
    clock += 30 * MINUTE;
    await race();
    expect(receiver.received).toHaveLength(1);
  });

  it('after a restart sends no round already claimed, and the next one when it is due', async () => {
    const session = await conversation();
    await handOver(session);
    await notifiers[0]!.runDue();
    expect(receiver.received).toHaveLength(1);

    // The first process stops; a new one starts on the same database (its timer's first look is at once).
    await notifiers[0]!.close();
    await stores[0]!.close();
    stores[0] = await database.open();
    notifiers[0] = notifierOn(stores[0]);
    notifiers[0].start();
    await notifiers[0].runDue();
    expect(receiver.received).toHaveLength(1);
    clock += 10 * MINUTE;
    await notifiers[0].runDue();
    expect(receiver.received.map((request) => request.json['round'])).toEqual([1, 2]);
  });

  it('counts a refused or redirected notice as failed and leaves it to the next round, never retrying at once', async () => {
    const session = await conversation();
    const handoff = await handOver(session);
    receiver.answerWith(500);
    await notifiers[0]!.notify(handoff);
    await race();
    expect(receiver.received).toHaveLength(1);
    expect(counted).toEqual([{ via: 'webhook', outcome: 'failed' }]);

    // A redirect is not followed: the signed notice goes to the receiver configured, nowhere else.
    receiver.answerWith(307);
    clock += 10 * MINUTE;
    await race();
    expect(receiver.received.map((request) => request.path)).toEqual(['/palaver-handoffs', '/palaver-handoffs']);
    expect(counted.map((entry) => entry.outcome)).toEqual(['failed', 'failed']);

    receiver.answerWith(204);
    clock += 10 * MINUTE;
    await race();
    expect(receiver.received.map((request) => request.json['round'])).toEqual([1, 2, 3]);
    expect(counted.map((entry) => entry.outcome)).toEqual(['failed', 'failed', 'sent']);
  });
});
