import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedCall, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { userTexts } from '../support/palaver-harness.js';
import { createTestPostgresDatabase, type TestPostgresDatabase } from '../support/postgres.js';

const CHILD = fileURLToPath(new URL('./journal-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let postgres: TestPostgresDatabase | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  await postgres?.drop();
  store = model = postgres = undefined;
});

const toolResults = (call: ScriptedCall) => call.messages.filter((item) => item.type === 'tool_result').length;

/**
 * A turn that books slot a, then slot b, then answers, in three model calls of 10 input and 5 output tokens each.
 * `holdSecondCall`: the model never answers the second call the first time it is asked.
 */
function bookingModel(options: { holdSecondCall: boolean }) {
  let hold = options.holdSecondCall;
  return startScriptedModelServer({
    script: async (call) => {
      const usage = { input: 10, output: 5 };
      switch (toolResults(call)) {
        case 0:
          return { toolCalls: [{ name: 'book', arguments: { slot: 'a' }, callId: 'call_a' }], usage };
        case 1:
          if (hold) {
            hold = false;
            // The process is killed while this call is under way: slot a is booked, b is not.
            await new Promise((resolve) => setTimeout(resolve, 30_000));
          }
          return { toolCalls: [{ name: 'book', arguments: { slot: 'b' }, callId: 'call_b' }], usage };
        default:
          return { text: 'Booked a and b.', usage };
      }
    },
  });
}

interface Run {
  readonly databaseUrl: string;
  readonly toolLog: string;
  start(options?: { holdSlot?: string; agent?: Record<string, unknown>; staged?: Record<string, unknown>; readOnly?: boolean }): Promise<RunningChild>;
}

function prepare(databaseUrl: string): Run {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-resume-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a booking agent.');
  const toolLog = join(dir, 'tool.log');
  writeFileSync(toolLog, '');
  return {
    databaseUrl,
    toolLog,
    async start(options = {}) {
      const config = { databaseUrl, modelUrl: model!.baseUrl, instructionsDir: join(dir, 'instructions'), leaseMs: LEASE_MS, toolLog, ...options };
      const child = spawnNode(CHILD, [JSON.stringify(config)], { cwd: REPO_ROOT, env: cleanEnv() });
      await child.waitForOutput(/^ready$/m, 20_000);
      return child;
    },
  };
}

const toolLines = (run: Run) => readFileSync(run.toolLog, 'utf8').trim().split('\n');
const sentLines = (...children: RunningChild[]) =>
  children.flatMap((child) =>
    child
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('sent ')),
  );

/** What the person and the books see once the restarted process answered: the reply, its cost, and no journal left. */
async function expectAnsweredOnce(run: Run, first: RunningChild, second: RunningChild): Promise<void> {
  await second.waitForOutput(/^sent Booked a and b\.$/m, 15_000);
  // Stopped gracefully: whatever it still had to send is sent before it exits.
  await second.stop('SIGTERM');
  expect(sentLines(first, second)).toEqual(['sent Booked a and b.']);

  store = await openStore(run.databaseUrl, { migrate: false });
  const user = await store.users.findByAccount('chat', 'alice');
  const [session] = await store.sessions.listByUser(user!.id);
  const messages = await store.messages.listRecent(session!.id, { limit: 20, audience: 'display' });
  expect(messages.map((message) => `${message.role}: ${message.content}`)).toEqual(['user: book a and b', 'assistant: Booked a and b.']);
  // Three model calls, each counted once: the replayed one is not paid again.
  expect({ input: messages[1]!.inputTokens, output: messages[1]!.outputTokens }).toEqual({ input: 30, output: 15 });
  expect({ input: session!.inputTokens, output: session!.outputTokens, status: session!.status }).toEqual({ input: 30, output: 15, status: 'completed' });
  // The journal went with the reply.
  expect(await store.toolCalls.listBySession(session!.id)).toEqual([]);
  const audit = await store.messages.listRecent(session!.id, { limit: 20, audience: 'audit' });
  expect(audit.map((message) => message.content)).toEqual(['booked a', 'booked b']);
}

async function killAfterFirstToolAndRestart(databaseUrl: string): Promise<void> {
  model = await bookingModel({ holdSecondCall: true });
  const run = prepare(databaseUrl);
  const first = await run.start();
  first.process.stdin.write('alice book a and b\n');
  // The second model call is under way: slot a is booked and recorded.
  await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(2);
  expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

  const second = await run.start();
  await expectAnsweredOnce(run, first, second);
  const [key] = /start (\S+) a/.exec(toolLines(run)[0]!)!.slice(1);
  const keyB = /start (\S+) b/.exec(toolLines(run)[2] ?? '')?.[1];
  // Slot a was booked once: the resumed turn took its result from the journal. Slot b, never started, ran once.
  expect(toolLines(run)).toEqual([`start ${key} a`, `done ${key} a`, `start ${keyB} b`, `done ${keyB} b`]);
  // The model was not asked again for the first call; the second, cut off, was asked again; then the answer.
  expect(model.calls.map(toolResults)).toEqual([0, 1, 1, 2]);
}

async function killWhileToolRunsAndRestart(databaseUrl: string): Promise<void> {
  model = await bookingModel({ holdSecondCall: false });
  const run = prepare(databaseUrl);
  const first = await run.start({ holdSlot: 'b' });
  first.process.stdin.write('alice book a and b\n');
  await expect.poll(() => toolLines(run).some((line) => / b$/.test(line) && line.startsWith('start ')), { timeout: 10_000, interval: 20 }).toBe(true);
  expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

  const second = await run.start();
  await expectAnsweredOnce(run, first, second);
  const lines = toolLines(run);
  const keyA = /^start (\S+) a$/.exec(lines[0]!)![1];
  const keyB = /^start (\S+) b$/.exec(lines[2]!)![1];
  // Slot b, cut off while it ran, ran again under the same idempotency key; slot a did not run again.
  expect(lines).toEqual([`start ${keyA} a`, `done ${keyA} a`, `start ${keyB} b`, `start ${keyB} b`, `done ${keyB} b`]);
  expect(keyB).not.toBe(keyA);
  // Both model calls before the kill came from the journal; only the answer was asked for.
  expect(model.calls.map(toolResults)).toEqual([0, 1, 2]);
}

/** As above, with `book` declared read-only: nothing of its call is recorded before it runs, so the model is asked again. */
async function killWhileReadOnlyToolRunsAndRestart(databaseUrl: string): Promise<void> {
  model = await bookingModel({ holdSecondCall: false });
  const run = prepare(databaseUrl);
  const first = await run.start({ holdSlot: 'b', readOnly: true });
  first.process.stdin.write('alice book a and b\n');
  await expect.poll(() => toolLines(run).some((line) => / b$/.test(line) && line.startsWith('start ')), { timeout: 10_000, interval: 20 }).toBe(true);
  expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

  const second = await run.start({ readOnly: true });
  await expectAnsweredOnce(run, first, second);
  const lines = toolLines(run);
  const keyA = /^start (\S+) a$/.exec(lines[0]!)![1];
  const keyB = /^start (\S+) b$/.exec(lines[2]!)![1];
  // Slot a's call was recorded with its result: it did not run again. Slot b's call was cut off before anything of
  // it was recorded, so the model was asked again for it, and it ran again.
  expect(lines).toEqual([`start ${keyA} a`, `done ${keyA} a`, `start ${keyB} b`, `start ${keyB} b`, `done ${keyB} b`]);
  expect(model.calls.map(toolResults)).toEqual([0, 1, 1, 2]);
}

const STAGED = {
  agent: { flow: 'staged', type: 'booking' },
  staged: { types: { booking: { intent: { name: 'intent-model' }, execution: { name: 'execution-model' }, organization: { name: 'organization-model' } } } },
};

/** A staged booking: intent, execution (one tool call, then its report), organization (held the first time). */
function stagedBookingModel() {
  let hold = true;
  return startScriptedModelServer({
    script: async (call) => {
      const usage = { input: 10, output: 5 };
      switch (call.output?.name) {
        case 'intent':
          return { text: JSON.stringify({ direct: false, answer: null, intent: 'book slot a', details: 'slot a' }), usage };
        case 'execution':
          return toolResults(call) === 0
            ? { toolCalls: [{ name: 'book', arguments: { slot: 'a' } }], usage }
            : { text: JSON.stringify({ status: 'done', summary: 'Booked slot a', facts: ['slot a'] }), usage };
        default:
          if (hold) {
            hold = false;
            await new Promise((resolve) => setTimeout(resolve, 30_000));
          }
          return { text: JSON.stringify({ reply: 'Slot a is booked.' }), usage };
      }
    },
  });
}

describe('a turn a SIGKILL cut off resumes, it does not start again', () => {
  it('resumes a batch of two messages as one turn, though recovery hands them over one by one, on SQLite', async () => {
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let holdSecondCall = true;
    model = await startScriptedModelServer({
      script: async (call) => {
        const said = userTexts(call);
        if (said.at(-1) === 'one') {
          await firstHeld;
          return { text: 'first answer' };
        }
        if (toolResults(call) === 0) return { toolCalls: [{ name: 'book', arguments: { slot: 'a' } }] };
        if (holdSecondCall) {
          holdSecondCall = false;
          await new Promise((resolve) => setTimeout(resolve, 30_000));
        }
        return { text: `Booked a for ${said.slice(-2).join(' and ')}.` };
      },
    });
    const run = prepare(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-resume-db-')), 'palaver.db')}`);
    const first = await run.start();
    first.process.stdin.write('alice one\n');
    await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(1);
    // Two more arrive while the first turn runs: the next turn answers them together.
    first.process.stdin.write('alice two\nalice three\n');
    await first.waitForOutput(/^accepted alice three$/m);
    releaseFirst();
    await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(3);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

    // The two were accepted at once: the batch holds them in the order the first process queued them.
    const seen = userTexts(model.calls[1]!).slice(-2);
    expect([...seen].sort()).toEqual(['three', 'two']);
    const reply = `Booked a for ${seen.join(' and ')}.`;
    const second = await run.start();
    await second.waitForOutput(new RegExp(`^sent ${reply.replace('.', '\\.')}$`, 'm'), 15_000);
    await second.stop('SIGTERM');
    expect(sentLines(first, second)).toEqual(['sent first answer', `sent ${reply}`]);
    expect(toolLines(run).map((line) => line.replace(/ \S+ /, ' '))).toEqual(['start a', 'done a']);
    // The batch's first call came from the journal: asked once, with both messages.
    expect(model.calls.filter((call) => toolResults(call) === 0 && userTexts(call).includes('two')).map(userTexts)).toEqual([['one', ...seen]]);
    // The resumed turn answered the batch in the order its model saw it, and stored it so.
    expect(userTexts(model.calls.at(-1)!)).toEqual(['one', ...seen]);
    store = await openStore(run.databaseUrl, { migrate: false });
    const user = await store.users.findByAccount('chat', 'alice');
    const [session] = await store.sessions.listByUser(user!.id);
    const messages = await store.messages.listRecent(session!.id, { limit: 20, audience: 'display' });
    expect(messages.map((message) => `${message.role}: ${message.content}`)).toEqual([
      'user: one',
      'assistant: first answer',
      ...seen.map((text) => `user: ${text}`),
      `assistant: ${reply}`,
    ]);
    expect(await store.inbound.listQueued(session!.id)).toEqual([]);
  }, 60_000);

  it('resumes a staged turn at the stage the kill cut off, on SQLite', async () => {
    model = await stagedBookingModel();
    const run = prepare(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-resume-db-')), 'palaver.db')}`);
    const first = await run.start(STAGED);
    first.process.stdin.write('alice book slot a\n');
    await expect.poll(() => model!.calls.length, { timeout: 10_000 }).toBe(4);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

    const second = await run.start(STAGED);
    await second.waitForOutput(/^sent Slot a is booked\.$/m, 15_000);
    await second.stop('SIGTERM');
    expect(sentLines(first, second)).toEqual(['sent Slot a is booked.']);
    expect(toolLines(run).map((line) => line.replace(/ \S+ /, ' '))).toEqual(['start a', 'done a']);
    // Intent and execution came from the journal; only the organization stage the kill cut off was asked again.
    expect(model.calls.map((call) => call.output?.name)).toEqual(['intent', 'execution', 'execution', 'organization', 'organization']);
  }, 60_000);

  it('does not run a finished tool call again nor ask the model again for a recorded call, on SQLite', async () => {
    await killAfterFirstToolAndRestart(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-resume-db-')), 'palaver.db')}`);
  }, 60_000);

  it('does not run a finished tool call again nor ask the model again for a recorded call, on PostgreSQL', async () => {
    postgres = await createTestPostgresDatabase();
    await killAfterFirstToolAndRestart(postgres.url);
  }, 60_000);

  it('runs a tool call killed while running again, with the same idempotency key, on SQLite', async () => {
    await killWhileToolRunsAndRestart(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-resume-db-')), 'palaver.db')}`);
  }, 60_000);

  it('asks the model again for a read-only tool call killed while running, which wrote nothing before it ran, on SQLite', async () => {
    await killWhileReadOnlyToolRunsAndRestart(`sqlite:${join(mkdtempSync(join(tmpdir(), 'palaver-resume-db-')), 'palaver.db')}`);
  }, 60_000);

  it('runs a tool call killed while running again, with the same idempotency key, on PostgreSQL', async () => {
    postgres = await createTestPostgresDatabase();
    await killWhileToolRunsAndRestart(postgres.url);
  }, 60_000);
});
