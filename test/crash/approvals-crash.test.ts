import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedCall, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { lastUserText } from '../support/palaver-harness.js';
import { readSqliteFile } from '../support/sqlite-file.js';

// Tool calls that wait for a person's yes, across SIGKILL and restart: Palaver processes (test/crash/journal-child.ts,
// its `book` tool declared `approval: 'person'`) on one SQLite file, the person answering in words on a memory channel.

const CHILD = fileURLToPath(new URL('./journal-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  store = model = undefined;
});

/**
 * Books slot a (a call that needs approval); then answers with what the tool said (or why it did not run). A "yes"
 * its turn does not take as the answer is answered as a message of its own.
 */
function bookingModel() {
  return startScriptedModelServer({
    script: (call: ScriptedCall) => {
      const result = [...call.messages].reverse().find((item) => item.type === 'tool_result') as { output?: string } | undefined;
      if (result) return { text: `Answer: ${result.output}` };
      if (lastUserText(call) === 'yes') return { text: 'Nothing waits for your yes now.' };
      return { text: 'Let me book it.', toolCalls: [{ name: 'book', arguments: { slot: 'a' }, callId: 'call_a' }] };
    },
  });
}

interface Run {
  readonly databaseUrl: string;
  readonly toolLog: string;
  start(options?: { holdSlot?: string; clockAheadMs?: number }): Promise<RunningChild>;
}

function prepare(): Run {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-approval-crash-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a booking agent.');
  const toolLog = join(dir, 'tool.log');
  writeFileSync(toolLog, '');
  const databaseUrl = `sqlite:${join(dir, 'palaver.db')}`;
  return {
    databaseUrl,
    toolLog,
    async start(options = {}) {
      const config = {
        databaseUrl,
        modelUrl: model!.baseUrl,
        instructionsDir: join(dir, 'instructions'),
        leaseMs: LEASE_MS,
        toolLog,
        approval: 'person',
        ...options,
      };
      const child = spawnNode(CHILD, [JSON.stringify(config)], { cwd: REPO_ROOT, env: cleanEnv() });
      await child.waitForOutput(/^ready$/m, 20_000);
      return child;
    },
  };
}

const toolLines = (run: Run) => readFileSync(run.toolLog, 'utf8').split('\n').filter(Boolean);
const outputLines = (prefix: string, ...children: RunningChild[]) =>
  children.flatMap((child) =>
    child
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith(prefix)),
  );

/** The requests as the database holds them (another process's view). */
const approvals = (run: Run) =>
  readSqliteFile(run.databaseUrl, (db) =>
    db.all<{ id: string; status: string; decided_by: string | null }>('SELECT id, status, decided_by FROM tool_approvals'),
  );
const sentQuestions = (run: Run) =>
  readSqliteFile(run.databaseUrl, (db) =>
    Number(db.get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE approval IS NOT NULL AND state = 'sent'")?.n),
  );

/** Asks for the booking and waits until the question was delivered (its outbox part marked sent), then kills. */
async function askThenKill(run: Run, first: RunningChild): Promise<string> {
  first.process.stdin.write('alice book slot a\n');
  const [, approvalId] = await first.waitForOutput(/^asked (\S+)$/m, 15_000);
  await expect.poll(() => sentQuestions(run), { timeout: 10_000, interval: 50 }).toBe(1);
  expect(approvals(run)).toEqual([{ id: approvalId, status: 'pending', decided_by: null }]);
  expect(toolLines(run)).toEqual([]);
  expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
  return approvalId!;
}

/** The conversation as the person sees it once it is over, read from the store after the last process stopped. */
async function conversation(run: Run): Promise<string[]> {
  store = await openStore(run.databaseUrl, { migrate: false });
  const user = await store.users.findByAccount('chat', 'alice');
  const [session] = await store.sessions.listByUser(user!.id);
  expect(await store.toolCalls.listBySession(session!.id)).toEqual([]);
  expect(await store.approvals.pendingFor(session!.id)).toBeUndefined();
  const messages = await store.messages.listRecent(session!.id, { limit: 20, audience: 'display' });
  return messages.map((message) => `${message.role}: ${message.content.split('\n')[0]}`);
}

describe('a tool call waiting for approval, across SIGKILL and restart', () => {
  it('killed while waiting: the next process takes the yes, runs the tool once and answers, without asking again', async () => {
    model = await bookingModel();
    const run = prepare();
    const first = await run.start();
    const approvalId = await askThenKill(run, first);

    const second = await run.start();
    second.process.stdin.write('alice yes\n');
    await second.waitForOutput(/^sent Answer: booked a$/m, 15_000);
    await second.stop('SIGTERM');

    const [start, done] = toolLines(run);
    const key = /^start (\S+) a$/.exec(start!)![1];
    expect(toolLines(run)).toEqual([`start ${key} a`, `done ${key} a`]);
    expect(outputLines('asked ', first, second)).toEqual([`asked ${approvalId}`]);
    expect(outputLines('sent Answer', first, second)).toEqual(['sent Answer: booked a']);
    expect(approvals(run)).toEqual([{ id: approvalId, status: 'approved', decided_by: 'person:chat:alice' }]);
    expect(done).toBe(`done ${key} a`);
    // The model asked for the call once; the resumed turn took it from the journal and asked only for the answer.
    expect(model.calls.map((call) => call.messages.filter((item) => item.type === 'tool_result').length)).toEqual([0, 1]);
    expect(await conversation(run)).toEqual(['user: book slot a', 'assistant: Before I go on, I need your yes:', 'user: yes', 'assistant: Answer: booked a']);
  }, 60_000);

  it('killed while the approved tool runs: the next process runs it again under the same idempotency key and answers once', async () => {
    model = await bookingModel();
    const run = prepare();
    const first = await run.start({ holdSlot: 'a' });
    first.process.stdin.write('alice book slot a\n');
    const [, approvalId] = await first.waitForOutput(/^asked (\S+)$/m, 15_000);
    first.process.stdin.write('alice yes\n');
    // The tool started (and never finishes in this process).
    await expect.poll(() => toolLines(run), { timeout: 15_000, interval: 20 }).toHaveLength(1);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');
    expect(approvals(run)).toEqual([{ id: approvalId, status: 'approved', decided_by: 'person:chat:alice' }]);

    const second = await run.start();
    await second.waitForOutput(/^sent Answer: booked a$/m, 15_000);
    await second.stop('SIGTERM');

    const key = /^start (\S+) a$/.exec(toolLines(run)[0]!)![1];
    // Cut off while it ran, the call went out again with the same key (the tool can tell it is the same call).
    expect(toolLines(run)).toEqual([`start ${key} a`, `start ${key} a`, `done ${key} a`]);
    expect(outputLines('asked ', first, second)).toEqual([`asked ${approvalId}`]);
    expect(outputLines('sent Answer', first, second)).toEqual(['sent Answer: booked a']);
    expect(model.calls.map((call) => call.messages.filter((item) => item.type === 'tool_result').length)).toEqual([0, 1]);
    expect(await conversation(run)).toEqual(['user: book slot a', 'assistant: Before I go on, I need your yes:', 'user: yes', 'assistant: Answer: booked a']);
  }, 60_000);

  it('expired while no process ran: the next process declines it, the model answers, and the tool never runs', async () => {
    model = await bookingModel();
    const run = prepare();
    const first = await run.start();
    const approvalId = await askThenKill(run, first);

    // An hour and a minute pass (the default `tools.approvalTimeoutMinutes` is 60) before Palaver runs again.
    const second = await run.start({ clockAheadMs: 61 * 60_000 });
    // The expiry check runs every 15 s in every process.
    await second.waitForOutput(/^sent Answer: Error: Not approved in time/m, 30_000);
    await second.stop('SIGTERM');

    expect(toolLines(run)).toEqual([]);
    expect(approvals(run)).toEqual([{ id: approvalId, status: 'expired', decided_by: 'expiry' }]);
    expect(outputLines('asked ', first, second)).toEqual([`asked ${approvalId}`]);
    expect(outputLines('sent Answer', first, second)).toHaveLength(1);
    expect(model.calls.map((call) => call.messages.filter((item) => item.type === 'tool_result').length)).toEqual([0, 1]);
    expect(await conversation(run)).toEqual([
      'user: book slot a',
      'assistant: Before I go on, I need your yes:',
      'user: ⌛ No answer in time: not done',
      'assistant: Answer: Error: Not approved in time: book was not run. Tell them, and offer to try again.',
    ]);
  }, 60_000);

  it('expired while no process ran, and a yes right after the restart: too late, the tool never runs, and the yes is answered on its own', async () => {
    model = await bookingModel();
    const run = prepare();
    const first = await run.start();
    const approvalId = await askThenKill(run, first);

    const second = await run.start({ clockAheadMs: 61 * 60_000 });
    // Before the next expiry check: the yes itself finds the request out of time, and the expiry is taken then.
    second.process.stdin.write('alice yes\n');
    await second.waitForOutput(/^sent Nothing waits for your yes now\.$/m, 15_000);
    await second.stop('SIGTERM');

    expect(toolLines(run)).toEqual([]);
    expect(approvals(run)).toEqual([{ id: approvalId, status: 'expired', decided_by: 'expiry' }]);
    expect(outputLines('asked ', first, second)).toEqual([`asked ${approvalId}`]);
    expect(await conversation(run)).toEqual([
      'user: book slot a',
      'assistant: Before I go on, I need your yes:',
      'user: ⌛ No answer in time: not done',
      'assistant: Answer: Error: Not approved in time: book was not run. Tell them, and offer to try again.',
      'user: yes',
      'assistant: Nothing waits for your yes now.',
    ]);
  }, 60_000);
});
