/**
 * Turn time against the length of the conversation: a full turn (`palaver.chat`, the `lookup` tool round) for a user
 * whose session holds `stored[0]` messages (10) and one whose session holds `stored[1]` (100,000), the two users'
 * turns interleaved one by one (which goes first alternates), in several runs.
 *
 * Both sessions are set up through the store in one transaction each, in the shape turns leave them (user message,
 * tool audit record, reply), and before every turn the oldest messages are deleted (outside the timing) so each
 * holds exactly its count when the turn starts. `historyLimit` is 6, below the small session's 7 display messages,
 * so both turns send the model the same history: only the stored count differs.
 *
 * `cacheTtlMs` as shipped leaves the history in the conversation cache between turns; at 1 ms every turn reads
 * participants, state, profile and history from the store (`listRecent` included), the case the index must carry.
 *
 * The variant (bench/run.ts's `--history-backends`) picks where Palaver runs (bench/history-palaver.ts):
 * - `sqlite`: this process, a SQLite file in a temp folder, the tool inline;
 * - `postgres`: this process, the PostgreSQL database `databaseUrl` (fresh, made and dropped by the parent);
 * - `streams`: this process on SQLite, the tool dispatched through Redis Streams to the parent's `palaver worker`;
 * - `two-processes`: two peer processes (bench/history-peer.ts, `peerEntry`) on the one PostgreSQL database, each
 *   user's turns alternating between them, so every turn takes its conversation over from the other process; the
 *   turn is timed by the peer that ran it (its `palaver.chat`, its CPU), not across the IPC.
 * Palaver runs from the compiled `dist`. Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../src/store/index.js';
import { startHistoryPalaver, type HistoryPalaver, type HistoryPalaverArgs, type HistoryTurn } from './history-palaver.js';
import type { HistoryPeerReply, HistoryPeerRequest } from './history-peer.js';
import { scenarioArgs } from './stats.js';

export { BENCH_HISTORY_LIMIT } from './history-palaver.js';

export type HistoryVariant = 'sqlite' | 'postgres' | 'streams' | 'two-processes';

export interface HistoryScenarioArgs {
  readonly baseUrl: string;
  readonly variant: HistoryVariant;
  /** Stored messages of the two sessions, small first. */
  readonly stored: readonly [number, number];
  readonly runs: number;
  /** Measured turns per user per run. */
  readonly turns: number;
  readonly warmupTurns: number;
  /** The conversation cache's time to live; 1 makes every turn read the store. */
  readonly cacheTtlMs: number;
  /** A PostgreSQL database for this run; absent: a SQLite file in a temp folder. */
  readonly databaseUrl?: string;
  /** The Redis of the `palaver worker` that runs the tool (the `streams` variant). */
  readonly streams?: { readonly redisUrl: string; readonly keyPrefix: string };
  /** The compiled bench/history-peer.ts: set, two peer processes run the turns, alternating per user. */
  readonly peerEntry?: string;
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
  readonly variant: HistoryVariant;
  readonly cacheTtlMs: number;
  readonly samples: HistoryRunSample[];
  /** Per user, at the end: messages stored when a turn starts, and display messages its turn sends the model. */
  readonly sessions: { readonly stored: number; readonly historySent: number }[];
  readonly setupMs: number;
  readonly failed: number;
}

/** Where the turns run: this process, or two peers taking turns (`chat`'s `turn` picks the peer). */
interface TurnRunner {
  chat(userId: string, turn: number): Promise<HistoryTurn>;
  seed(sessionId: string, count: number): Promise<void>;
  historySent(sessionId: string): Promise<number>;
  close(): Promise<void>;
}

function inProcess(palaver: HistoryPalaver): TurnRunner {
  return {
    chat: (userId) => palaver.chat(userId),
    seed: (sessionId, count) => palaver.seed(sessionId, count),
    historySent: (sessionId) => palaver.historySent(sessionId),
    close: () => palaver.close(),
  };
}

/** Two peer processes on the one database, started one after the other (the first migrates it). */
async function startPeers(entry: string, palaverArgs: HistoryPalaverArgs): Promise<TurnRunner> {
  const peers: Peer[] = [];
  for (let index = 0; index < 2; index += 1) peers.push(await Peer.start(entry, palaverArgs, `peer ${index + 1}`));
  return {
    chat: (userId, turn) => peers[turn % 2]!.ask({ type: 'chat', userId }) as Promise<HistoryTurn>,
    seed: async (sessionId, count) => void (await peers[0]!.ask({ type: 'seed', sessionId, count })),
    historySent: (sessionId) => peers[0]!.ask({ type: 'historySent', sessionId }) as Promise<number>,
    close: async () => void (await Promise.all(peers.map((peer) => peer.ask({ type: 'close' })))),
  };
}

/** One peer process and its one request in flight. */
class Peer {
  #waiting: { resolve(value: unknown): void; reject(error: Error): void } | undefined;

  private constructor(
    readonly child: ChildProcess,
    readonly label: string,
  ) {
    child.on('message', (reply: HistoryPeerReply) => {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (reply.type === 'done') waiting?.resolve(reply.value);
      else if (reply.type === 'failed') waiting?.reject(new Error(`${label}: ${reply.message}`));
    });
    child.on('exit', (code, signal) => this.#waiting?.reject(new Error(`${label} exited (${signal ?? code})`)));
  }

  static async start(entry: string, palaverArgs: HistoryPalaverArgs, label: string): Promise<Peer> {
    const child = fork(entry, [JSON.stringify(palaverArgs)], { execArgv: ['--no-warnings'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code, signal) => reject(new Error(`history ${label} exited (${signal ?? code}) before it was ready`)));
    });
    return new Peer(child, label);
  }

  ask(request: HistoryPeerRequest): Promise<unknown> {
    if (this.#waiting) throw new Error(`${this.label} asked twice at once; the scenario drives one turn at a time`);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.child.send(request);
    });
  }
}

const args = scenarioArgs<HistoryScenarioArgs>();
const { openSqliteDatabase, openPostgresDatabase } = (await import(
  new URL('../dist/store/index.js', import.meta.url).href
)) as typeof import('../src/store/index.js');
const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-history-db-'));
const databaseUrl = args.databaseUrl ?? `sqlite:${join(dir, 'palaver.db')}`;
const palaverArgs: HistoryPalaverArgs = { baseUrl: args.baseUrl, databaseUrl, cacheTtlMs: args.cacheTtlMs, ...(args.streams ? { streams: args.streams } : {}) };

const runner: TurnRunner = args.peerEntry ? await startPeers(args.peerEntry, palaverArgs) : inProcess(await startHistoryPalaver(palaverArgs));
// A second connection to the same database, for the trimming between turns (a WAL SQLite file takes both).
const trimmer: Kysely<Database> = databaseUrl.startsWith('sqlite:')
  ? openSqliteDatabase(databaseUrl)
  : await openPostgresDatabase(databaseUrl, { poolSize: 1 });

let failed = 0;
const users = args.stored.map((count) => ({ userId: `stored-${count}`, count, sessionId: '', turns: 0 }));
type User = (typeof users)[number];

async function chat(user: User): Promise<HistoryTurn> {
  const turn = await runner.chat(user.userId, user.turns);
  user.turns += 1;
  if (!turn.ok) {
    failed += 1;
    if (failed <= 3) console.error(`[history ${args.variant}] unexpected reply (${turn.detail})`);
  }
  return turn;
}

const setupStarted = performance.now();
for (const user of users) {
  user.sessionId = (await chat(user)).sessionId;
  // One append, one transaction: the session's seq counter and totals stay as turns would have left them.
  await runner.seed(user.sessionId, Math.max(0, user.count - 3));
}
const setupMs = performance.now() - setupStarted;

/** Deletes the session's oldest messages so it holds exactly `count`. */
async function trim(user: User): Promise<void> {
  await sql`delete from messages where session_id = ${user.sessionId} and seq <= (select last_seq from sessions where id = ${user.sessionId}) - ${user.count}`.execute(
    trimmer,
  );
}

async function timedTurn(user: User, sample: { turnMs: number[]; cpuMs: number; mainThreadCpuMs: number | undefined }): Promise<void> {
  await trim(user);
  const turn = await chat(user);
  sample.turnMs.push(turn.turnMs);
  sample.cpuMs += turn.cpuMs;
  sample.mainThreadCpuMs =
    turn.mainThreadCpuMs === undefined || sample.mainThreadCpuMs === undefined ? undefined : sample.mainThreadCpuMs + turn.mainThreadCpuMs;
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
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from messages where session_id = ${user.sessionId}`.execute(trimmer);
    sessions.push({ stored: Number(rows[0]!.n), historySent: await runner.historySent(user.sessionId) });
  }
  const result: HistoryScenarioResult = { variant: args.variant, cacheTtlMs: args.cacheTtlMs, samples, sessions, setupMs, failed };
  await trimmer.destroy();
  await runner.close();
  if (process.send) process.send(result, () => process.exit(0));
  else console.log(JSON.stringify(result, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
