/**
 * Turn time against the length of the conversation: a full turn (`palaver.chat`, the `lookup` tool round, SQLite
 * file) for a user whose session holds `stored[0]` messages (10) and one whose session holds `stored[1]` (100,000),
 * the two users' turns interleaved one by one (which goes first alternates), in several runs.
 *
 * Both sessions are set up through the store in one transaction each, in the shape turns leave them (user message,
 * tool audit record, reply), and before every turn the oldest messages are deleted (outside the timing) so each
 * holds exactly its count when the turn starts. `historyLimit` is 6, below the small session's 7 display messages,
 * so both turns send the model the same history: only the stored count differs.
 *
 * `cacheTtlMs` as shipped leaves the history in the conversation cache between turns; at 1 ms every turn reads
 * participants, state, profile and history from the store (`listRecent` included), the case the index must carry.
 * Palaver runs from the compiled `dist`. Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { mainThreadCpuMs, scenarioArgs } from './stats.js';
import { BASE_INSTRUCTIONS, lookupTool, USER_TEXT } from './workload.js';

export interface HistoryScenarioArgs {
  readonly baseUrl: string;
  /** Stored messages of the two sessions, small first. */
  readonly stored: readonly [number, number];
  readonly runs: number;
  /** Measured turns per user per run. */
  readonly turns: number;
  readonly warmupTurns: number;
  /** The conversation cache's time to live; 1 makes every turn read the store. */
  readonly cacheTtlMs: number;
}

/** One run's turn times of one user. */
export interface HistoryRunSample {
  readonly stored: number;
  readonly run: number;
  readonly turnMs: number[];
  readonly cpuMs: number;
  readonly mainThreadCpuMs: number | undefined;
}

export interface HistoryScenarioResult {
  readonly cacheTtlMs: number;
  readonly samples: HistoryRunSample[];
  /** Per user, at the end: messages stored when a turn starts, and display messages its turn sends the model. */
  readonly sessions: { readonly stored: number; readonly historySent: number }[];
  readonly setupMs: number;
  readonly failed: number;
}

export const BENCH_HISTORY_LIMIT = 6;

const args = scenarioArgs<HistoryScenarioArgs>();
const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
const { openSqliteDatabase } = (await import(new URL('../dist/store/index.js', import.meta.url).href)) as typeof import('../src/store/index.js');
const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-history-'));
mkdirSync(join(dir, 'instructions'));
writeFileSync(join(dir, 'instructions', 'base.md'), BASE_INSTRUCTIONS);
const databaseUrl = `sqlite:${join(dir, 'palaver.db')}`;

const palaver = await createPalaver(
  {
    model: { name: 'scripted', baseUrl: args.baseUrl, maxRetries: 0, timeoutMs: 60_000 },
    database: { url: databaseUrl },
    agent: { instructionsDir: join(dir, 'instructions'), historyLimit: BENCH_HISTORY_LIMIT },
    cache: { ttlMs: args.cacheTtlMs },
    log: { level: 'silent' },
  },
  { tools: [lookupTool], logger: silentLogger() },
);
// A second connection to the same file, for the trimming between turns (a WAL database takes both).
const trimmer = openSqliteDatabase(databaseUrl);

let failed = 0;
const chat = async (userId: string): Promise<string> => {
  const reply = await palaver.chat({ userId, text: USER_TEXT });
  if (reply.status !== 'completed' || !reply.text.startsWith('Lookup done')) {
    failed += 1;
    if (failed <= 3) console.error(`[history] unexpected reply (${reply.status}): ${reply.text}`);
  }
  return reply.sessionId;
};

/** Messages in the shape a turn stores them: the question, the tool's audit record, the answer. */
function turnShaped(count: number) {
  return Array.from({ length: count }, (_, index) => {
    const turn = Math.floor(index / 3);
    switch (index % 3) {
      case 0:
        return { role: 'user' as const, audience: 'display' as const, content: `What is the status of item ${turn}? I need it before the delivery on Friday.` };
      case 1:
        return { role: 'tool' as const, audience: 'audit' as const, content: JSON.stringify({ id: turn, name: `item-${turn}`, status: 'in stock', priceEur: 12.5 }), toolCallId: `seed_${turn}` };
      default:
        return { role: 'assistant' as const, audience: 'display' as const, content: `Lookup done: item-${turn} is in stock at 12.50 EUR.` };
    }
  });
}

const users = args.stored.map((count) => ({ userId: `stored-${count}`, count, sessionId: '' }));
const setupStarted = performance.now();
for (const user of users) {
  user.sessionId = await chat(user.userId);
  // One append, one transaction: the session's seq counter and totals stay as turns would have left them.
  await palaver.store.messages.append(user.sessionId, turnShaped(Math.max(0, user.count - 3)));
}
const setupMs = performance.now() - setupStarted;

/** Deletes the session's oldest messages so it holds exactly `count`. */
async function trim(user: (typeof users)[number]): Promise<void> {
  await sql`delete from messages where session_id = ${user.sessionId} and seq <= (select last_seq from sessions where id = ${user.sessionId}) - ${user.count}`.execute(trimmer);
}

async function timedTurn(user: (typeof users)[number], sample: { turnMs: number[]; cpuMs: number; mainThreadCpuMs: number | undefined }): Promise<void> {
  await trim(user);
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadCpuMs();
  const started = performance.now();
  await chat(user.userId);
  sample.turnMs.push(performance.now() - started);
  const cpu = process.cpuUsage(cpuBefore);
  sample.cpuMs += (cpu.user + cpu.system) / 1000;
  const mainAfter = mainThreadCpuMs();
  sample.mainThreadCpuMs = mainBefore === undefined || mainAfter === undefined || sample.mainThreadCpuMs === undefined ? undefined : sample.mainThreadCpuMs + (mainAfter - mainBefore);
}

try {
  const scratch = () => ({ turnMs: [] as number[], cpuMs: 0, mainThreadCpuMs: 0 as number | undefined });
  for (let turn = 0; turn < args.warmupTurns; turn += 1) for (const user of turn % 2 === 0 ? users : [...users].reverse()) await timedTurn(user, scratch());

  const samples: HistoryRunSample[] = [];
  for (let run = 1; run <= args.runs; run += 1) {
    const byUser = users.map(() => scratch());
    for (let turn = 0; turn < args.turns; turn += 1) {
      const order = (turn + run) % 2 === 0 ? [0, 1] : [1, 0];
      for (const index of order) await timedTurn(users[index]!, byUser[index]!);
    }
    users.forEach((user, index) => samples.push({ stored: user.count, run, ...byUser[index]! }));
  }

  // What each session holds when a turn starts, and the history its turn sends: the same for both, or unfair.
  const sessions = [];
  for (const user of users) {
    await trim(user);
    const { rows } = await sql<{ n: number }>`select count(*) as n from messages where session_id = ${user.sessionId}`.execute(trimmer);
    const history = await palaver.store.messages.listRecent(user.sessionId, { limit: BENCH_HISTORY_LIMIT, audience: 'display', sinceContextStart: true });
    sessions.push({ stored: Number(rows[0]!.n), historySent: history.length });
  }
  const result: HistoryScenarioResult = { cacheTtlMs: args.cacheTtlMs, samples, sessions, setupMs, failed };
  await trimmer.destroy();
  await palaver.close();
  if (process.send) process.send(result, () => process.exit(0));
  else console.log(JSON.stringify(result, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
