import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { TurnEnd } from '../../src/domain/ports/channel.js';
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';
import { events, newVisitor, postRun, runInput } from '../security/attack-kit.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';
import { openSqliteFile } from '../support/sqlite-file.js';

// A turn that cannot be stored must never loop: before, the message stayed leased and unanswered and was run again
// (the model paid again) every third of a lease, forever, across restarts. Now the attempts are counted in the store,
// retried with a growing wait, and after `inbox.maxTurnAttempts` answered with an apology without the model.

let database: TestPostgresDatabase | undefined;
let harness: Harness | undefined;
beforeAll(async () => {
  database = await createTestPostgresDatabase();
});
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});
afterAll(async () => {
  await database?.drop();
});

/** Makes the database refuse every new message row whose content is `content`, as a store that throws on append would. */
type RefuseRows = (harness: Harness, content: string) => Promise<void>;

const refuseOnSqlite: RefuseRows = async (harness, content) => {
  const db = openSqliteFile(harness.databaseUrl, { writable: true });
  const name = `refuse_${content.replace(/\W/g, '_')}`;
  db.exec(`CREATE TRIGGER ${name} BEFORE INSERT ON messages WHEN NEW.content = '${content}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;`);
  db.close();
};

const refuseOnPostgres: RefuseRows = async (_harness, content) => {
  const client = new pg.Client({ connectionString: database!.url });
  await client.connect();
  const name = `refuse_${content.replace(/\W/g, '_')}`;
  await client.query(`create or replace function ${name}() returns trigger language plpgsql as $$
    begin if new.content = '${content}' then raise exception 'refused by the test'; end if; return new; end $$`);
  await client.query(`create trigger ${name} before insert on messages for each row execute function ${name}()`);
  await client.end();
};

const backends: [string, () => Record<string, unknown>, RefuseRows][] = [
  ['SQLite', () => ({}), refuseOnSqlite],
  ['PostgreSQL', () => ({ database: { url: database!.url } }), refuseOnPostgres],
];

// Retries wait a third of a lease, doubling: 100 ms, then 200 ms.
const inbox = { inbox: { leaseMs: 300, maxTurnAttempts: 3 } };

describe.each(backends)('a turn that cannot be stored, on %s', (_name, backend, refuseRows) => {
  it('is tried maxTurnAttempts times across a restart, then answered once with an apology without the model', async () => {
    // The tool's result cannot be stored, so neither the reply nor an apology that keeps the record of the tool call.
    let ran = 0;
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({}), run: () => (++ran, 'unstorable result') });
    harness = await createHarness((call) =>
      call.messages.at(-1)?.type === 'tool_result' ? { text: 'found it' } : { toolCalls: [{ name: 'lookup', arguments: {} }] },
    );
    const first = new MemoryChannel({ name: 'chat' });
    const config = { ...backend(), ...inbox };
    const before = await harness.start(config, { channels: [first], tools: [lookup] });
    await refuseRows(harness, 'unstorable result');

    const said = await first.say('hello', { accountId: 'ann' });
    // (A retry may follow within a third of a lease, before the restart.)
    await expect.poll(() => first.settled.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    // The person is told it failed, in words meant for them: never the store's own error text.
    const failure = first.settled[0]!.value as Extract<TurnEnd, { kind: 'error' }>;
    expect(failure.kind).toBe('error');
    expect(String((failure.error as Error).message)).toMatch(/^Sorry, I cannot answer right now\. .* Error reference: [0-9A-F]{8}$/);
    expect(String((failure.error as Error).message)).not.toMatch(/refused|messages\.append|insert/i);
    await before.close();

    // A restart: the next process takes the message over and keeps counting where the last one stopped.
    const chat = new MemoryChannel({ name: 'chat' });
    const after = await harness.start(config, { channels: [chat], tools: [lookup] });
    await expect.poll(() => chat.settled.some((end) => end.value.kind === 'answered'), { timeout: 10_000 }).toBe(true);
    const answered = chat.settled.find((end) => end.value.kind === 'answered')!.value as Extract<TurnEnd, { kind: 'answered' }>;
    expect(answered.outcome.status).toBe('failed');
    expect(answered.outcome.reply).toContain(answered.outcome.errorId);
    // Three attempts. The first asked the model twice (the tool round, then the answer); the later ones resume from the
    // turn's journal: the recorded tool round is not asked again and the tool never runs again, only the answer (a
    // call that asks for no tool is journaled with the next step, and there was none) is asked once per attempt.
    expect(harness.model.calls).toHaveLength(4);
    expect(ran).toBe(1);
    expect([...first.settled, ...chat.settled].map((end) => end.value.kind)).toEqual(['error', 'error', 'error', 'answered']);
    expect(await after.store.inbound.listQueued(answered.outcome.sessionId)).toEqual([]);
    const stored = await after.store.messages.listRecent(answered.outcome.sessionId, { limit: 10, audience: 'display' });
    expect(stored.map((message) => message.content)).toEqual(['hello', answered.outcome.reply]);
    // Counted once the apology is stored, a moment after the channel was told.
    await expect.poll(() => after.metrics.registry.getSingleMetricAsString('palaver_turns_abandoned_total')).toMatch(/palaver_turns_abandoned_total 1$/m);
    const giveUp = harness.logs.find(
      (line) => line['msg'] === 'giving up on the message after its turns failed inbox.maxTurnAttempts times; answering with an apology',
    );
    expect(giveUp).toMatchObject({ correlationId: said.correlationId, attempts: 4 });
  });

  it('is given up on when not even the apology can be stored, and never taken again', async () => {
    harness = await createHarness(() => ({ text: 'an answer' }));
    const chat = new MemoryChannel({ name: 'chat' });
    const palaver = await harness.start({ ...backend(), ...inbox }, { channels: [chat] });
    // The person's own message cannot be stored with any reply.
    await refuseRows(harness, 'poison');

    const said = await chat.say('poison', { accountId: 'bob' });
    await expect
      .poll(() => harness!.logs.some((line) => line['msg'] === 'message abandoned: neither an answer nor an apology could be stored'), { timeout: 10_000 })
      .toBe(true);
    expect(harness.model.calls).toHaveLength(3);
    expect(chat.settled.map((end) => end.value.kind)).toEqual(['error', 'error', 'error', 'error']);
    const user = await palaver.store.users.findByAccount('chat', 'bob');
    const session = (await palaver.store.sessions.listByUser(user!.id, 10))[0]!;
    // Out of the queue: recovery (here or after a restart) has nothing to take.
    expect(await palaver.store.inbound.listQueued(session.id)).toEqual([]);
    expect(await palaver.store.sessions.findById(session.id)).toMatchObject({ status: 'failed' });
    expect(await palaver.metrics.registry.getSingleMetricAsString('palaver_turns_abandoned_total')).toMatch(/palaver_turns_abandoned_total 1$/m);
    expect(harness.logs.find((line) => line['msg'] === 'message abandoned: neither an answer nor an apology could be stored')).toMatchObject({
      correlationId: said.correlationId,
    });
  });
});

describe('a web run whose turn cannot be stored', () => {
  it("ends with RUN_ERROR carrying the apology and an error id, never the database's words", async () => {
    const lookup = defineTool({ name: 'lookup', description: 'Looks up', input: z.object({}), run: () => 'unstorable result' });
    harness = await createHarness((call) =>
      call.messages.at(-1)?.type === 'tool_result' ? { text: 'found it' } : { toolCalls: [{ name: 'lookup', arguments: {} }] },
    );
    const palaver = await harness.start(inbox, { tools: [lookup] });
    await refuseOnSqlite(harness, 'unstorable result');
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    try {
      const { cookie } = await newVisitor(server.url);
      const response = await postRun(server.url, runInput('web-thread', 'look it up'), { cookie });
      const end = events(response).at(-1)!;
      expect(end).toMatchObject({ type: 'RUN_ERROR', code: 'turn_failed' });
      expect(end['message']).toMatch(/^Sorry, I cannot answer right now\. .* Error reference: [0-9A-F]{8}$/);
      expect(response.body).not.toMatch(/refused by the test|messages\.append|SQLITE/);
    } finally {
      await server.close();
    }
  });
});
