/**
 * Several Palaver processes on one PostgreSQL database (issue #25): `node bin/palaver.js start --config <file>` (the
 * compiled dist, as shipped), each on its own port, all calling one scripted model server in this process that
 * answers after a fixed latency. The web chat (AG-UI over SSE, `POST /agui`) is the channel; requests go to the
 * processes round-robin, as a load balancer would send them.
 *
 * - **turns/s with one and with two processes**: `conversations` visitors, each its own conversation, each sending
 *   `turnsPerConversation` messages one after the other (the next once the reply came); after a warm-up of two
 *   messages per conversation, the measured turns' wall time, latency (POST → RUN_FINISHED) and the processes' CPU
 *   time (`/proc/<pid>/stat`).
 * - **takeover after SIGKILL**: two processes; `kills` times a message goes to one of them, and while its turn waits
 *   on the model that process is SIGKILLed; the visitor retries the same run on the other. Measured from the kill:
 *   until the reply is stored (the store, polled every 10 ms) and until the retried run showed it. The killed
 *   process is started again before the next round; the victim alternates.
 *
 * Used by bench/run.ts (`--only scale`); by hand: `node --import tsx bench/scale.ts [--quick]` after `npm run build`.
 * Needs PostgreSQL (PALAVER_BENCH_POSTGRES_URL, else PALAVER_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/postgres).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedCall } from '../src/testing/index.js';
import { createBenchPostgresDatabase } from './bench-postgres.js';
import { listeningUrl } from './listening-url.js';
import { visitor } from './web-visitor.js';
import { summarize, type LatencySummary } from './stats.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COOKIE_SECRET = `bench-cookie-secret-${randomBytes(16).toString('hex')}`;

export interface ScaleOptions {
  readonly quick?: boolean;
  /** Conversations at once in the throughput runs (default 100; 40 with quick). */
  readonly conversations?: number;
  /** Measured messages per conversation, after two warm-up ones (default 10; 3 with quick). */
  readonly turnsPerConversation?: number;
  /** The model's fixed latency per request, ms (default 20). */
  readonly modelLatencyMs?: number;
  /** SIGKILLs in the takeover run (default 20; 5 with quick). */
  readonly kills?: number;
}

export interface ThroughputResult {
  readonly processes: number;
  readonly turns: number;
  readonly seconds: number;
  readonly turnsPerSecond: number;
  readonly latency: LatencySummary;
  /** CPU time of the Palaver processes together, per turn (ms). */
  readonly cpuMsPerTurn: number;
  readonly failed: number;
}

export interface TakeoverResult {
  readonly kills: number;
  /** Kill → the reply stored by the other process, ms, in round order. */
  readonly storedMs: readonly number[];
  /** Kill → the retried run on the other process ended showing the reply, ms. */
  readonly retriedMs: readonly number[];
  readonly stored: LatencySummary;
  readonly retried: LatencySummary;
  /** Rounds whose retried run did not show exactly one reply, or whose message got more than one reply. */
  readonly failed: number;
}

export interface ScaleResult {
  readonly throughput: readonly ThroughputResult[];
  readonly takeover: TakeoverResult;
}

interface Cluster {
  readonly databaseUrl: string;
  readonly processes: PalaverProcess[];
  close(): Promise<void>;
}

interface PalaverProcess {
  readonly label: string;
  url: string;
  child: ChildProcessWithoutNullStreams;
  kill(): Promise<void>;
  restart(): Promise<void>;
}

export async function measureScale(options: ScaleOptions = {}): Promise<ScaleResult> {
  const quick = options.quick ?? false;
  const conversations = options.conversations ?? (quick ? 40 : 100);
  const turnsPerConversation = options.turnsPerConversation ?? (quick ? 3 : 10);
  const latencyMs = options.modelLatencyMs ?? 20;
  const kills = options.kills ?? (quick ? 5 : 20);

  const holds = new Map<string, () => void>();
  const model = await startScriptedModelServer({
    maxRecordedCalls: 100,
    maxStoredResponses: 100,
    script: async (call) => {
      const said = lastUserText(call);
      // A takeover round's first request waits until the bench has killed the process that made it.
      const hold = /^hold (\S+)/.exec(said)?.[1];
      if (hold !== undefined && !holds.has(hold)) await new Promise<void>((resolveHold) => holds.set(hold, resolveHold));
      await new Promise((resolveDelay) => setTimeout(resolveDelay, latencyMs));
      return { text: `answer to ${said} by ${call.model.split('@')[1] ?? '?'}` };
    },
  });
  try {
    const throughput: ThroughputResult[] = [];
    for (const processes of [1, 2]) {
      const cluster = await startCluster(model.baseUrl, processes);
      try {
        throughput.push(await measureThroughput(cluster, conversations, turnsPerConversation));
      } finally {
        await cluster.close();
      }
    }
    const cluster = await startCluster(model.baseUrl, 2);
    try {
      return { throughput, takeover: await measureTakeover(cluster, kills, holds) };
    } finally {
      await cluster.close();
    }
  } finally {
    await model.close();
  }
}

async function measureThroughput(cluster: Cluster, conversations: number, turnsPerConversation: number): Promise<ThroughputResult> {
  const { processes } = cluster;
  let next = 0;
  const pick = () => processes[next++ % processes.length]!;
  const cookies = await Promise.all(Array.from({ length: conversations }, (_, i) => visitor(processes[i % processes.length]!.url)));
  const threadIds = cookies.map(() => `bench-${randomBytes(6).toString('hex')}`);
  // Warm-up: the first two messages of every conversation (new visitor, new session, JIT).
  await Promise.all(
    cookies.map(async (cookie, i) => {
      for (let turn = 0; turn < 2; turn += 1) await converse(pick().url, cookie, threadIds[i]!, `warm-up ${turn}`);
    }),
  );

  const cpuBefore = processes.map((p) => processCpuMs(p.child.pid!));
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    cookies.map(async (cookie, i) => {
      for (let turn = 0; turn < turnsPerConversation; turn += 1) {
        const sent = performance.now();
        const ok = await converse(pick().url, cookie, threadIds[i]!, `question ${turn} of conversation ${i}`);
        latencies.push(performance.now() - sent);
        if (!ok) failed += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = processes.reduce((sum, p, i) => sum + processCpuMs(p.child.pid!) - cpuBefore[i]!, 0);
  const turns = conversations * turnsPerConversation;
  return { processes: processes.length, turns, seconds, turnsPerSecond: turns / seconds, latency: summarize(latencies), cpuMsPerTurn: cpuMs / turns, failed };
}

async function measureTakeover(cluster: Cluster, kills: number, holds: Map<string, () => void>): Promise<TakeoverResult> {
  const store = await openStore(cluster.databaseUrl, { migrate: false });
  const storedMs: number[] = [];
  const retriedMs: number[] = [];
  let failed = 0;
  try {
    const cookie = await visitor(cluster.processes[0]!.url);
    for (let round = 0; round < kills; round += 1) {
      const [victim, survivor] = round % 2 === 0 ? [cluster.processes[0]!, cluster.processes[1]!] : [cluster.processes[1]!, cluster.processes[0]!];
      const threadId = `kill-${round}-${randomBytes(4).toString('hex')}`;
      const tag = `r${round}`;
      const run = runBody(threadId, `hold ${tag} where is my parcel?`);
      const lost = post(victim.url, cookie, run).catch(() => undefined);
      await waitFor(() => holds.has(tag), 15_000, `the model request of round ${round}`);

      const killedAt = performance.now();
      await victim.kill();
      holds.get(tag)!();
      await lost;
      const retry = post(survivor.url, cookie, run);
      let stored = 0;
      await waitFor(
        async () => {
          const session = await store.sessions.findByConversation('web', threadId);
          const messages = session ? await store.messages.listRecent(session.id, { limit: 10, audience: 'display' }) : [];
          stored = messages.filter((message) => message.role === 'assistant').length;
          return stored > 0;
        },
        30_000,
        `the reply of round ${round}`,
        10,
      );
      storedMs.push(performance.now() - killedAt);
      const shown = await retry;
      retriedMs.push(shown.endedAt - killedAt);
      if (stored !== 1 || !shown.text.startsWith(`answer to hold ${tag}`)) failed += 1;
      await victim.restart();
    }
  } finally {
    await store.close();
  }
  return { kills, storedMs, retriedMs, stored: summarize(storedMs), retried: summarize(retriedMs), failed };
}

async function startCluster(modelBaseUrl: string, count: number): Promise<Cluster> {
  const database = await createBenchPostgresDatabase();
  const databaseUrl = database.url;
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-scale-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  const processes: PalaverProcess[] = [];
  const close = async () => {
    await Promise.all(processes.map((p) => p.kill()));
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  };
  try {
    for (let i = 0; i < count; i += 1) {
      const label = String.fromCharCode(97 + i);
      const file = join(dir, `palaver-${label}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          model: { name: `scripted@${label}`, baseUrl: modelBaseUrl, apiKey: 'bench-model-key', maxRetries: 0, timeoutMs: 60_000 },
          database: { url: databaseUrl },
          agent: { instructionsDir: join(dir, 'instructions') },
          channels: { web: { cookieSecret: COOKIE_SECRET } },
          limits: { maxConcurrentModelCalls: 64 },
          log: { level: 'warn' },
        }),
      );
      processes.push(await startProcess(label, file, dir));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { databaseUrl, processes, close };
}

async function startProcess(label: string, configFile: string, cwd: string): Promise<PalaverProcess> {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PALAVER_') || key === 'NODE_OPTIONS') delete env[key];
  const launch = async (): Promise<{ child: ChildProcessWithoutNullStreams; url: string }> => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin', 'palaver.js'), 'start', '--config', configFile, '--port', '0'], { cwd, env, stdio: 'pipe' });
    const url = await listeningUrl(child, `palaver ${label}`);
    return { child, url };
  };
  const first = await launch();
  const proc: PalaverProcess = {
    label,
    url: first.url,
    child: first.child,
    async kill() {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
      const gone = new Promise((resolveExit) => proc.child.once('exit', resolveExit));
      proc.child.kill('SIGKILL');
      await gone;
    },
    async restart() {
      const next = await launch();
      proc.child = next.child;
      proc.url = next.url;
    },
  };
  return proc;
}

function runBody(threadId: string, text: string): string {
  const id = randomBytes(8).toString('hex');
  return JSON.stringify({
    threadId,
    runId: `run-${id}`,
    messages: [{ id: `m-${id}`, role: 'user', content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  });
}

/** Posts a run and reads its stream to the end: the reply text shown and when it ended. */
async function post(base: string, cookie: string, body: string): Promise<{ ok: boolean; text: string; endedAt: number }> {
  const response = await fetch(`${base}/agui`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream', cookie }, body });
  const raw = await response.text();
  const endedAt = performance.now();
  let text = '';
  let ok = false;
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const event = JSON.parse(line.slice(5)) as { type: string; delta?: string; result?: { status?: string } };
    if (event.type === 'TEXT_MESSAGE_CONTENT') text += event.delta ?? '';
    if (event.type === 'RUN_FINISHED') ok = true;
  }
  return { ok: response.status === 200 && ok, text, endedAt };
}

async function converse(base: string, cookie: string, threadId: string, text: string): Promise<boolean> {
  try {
    return (await post(base, cookie, runBody(threadId, text))).ok;
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string, intervalMs = 5): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolveTimer) => setTimeout(resolveTimer, intervalMs));
  }
}

function lastUserText(call: ScriptedCall): string {
  const said = [...call.messages].reverse().find((item) => item.type === 'message' && item.role === 'user');
  return said?.type === 'message' ? said.content : '';
}

/** User + system CPU time of a process so far, ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** The figures as lines of text, as bench/run.ts prints them. */
export function describeScale(result: ScaleResult): string[] {
  const lines = result.throughput.map(
    (r) =>
      `  ${r.processes} process${r.processes === 1 ? ' ' : 'es'}: ${r.turnsPerSecond.toFixed(1)} turns/s (${r.turns} turns in ${r.seconds.toFixed(1)} s), p50 ${r.latency.p50Ms.toFixed(0)} ms, p99 ${r.latency.p99Ms.toFixed(0)} ms, ` +
      `CPU ${r.cpuMsPerTurn.toFixed(1)} ms/turn (the processes together)${r.failed ? `  FAILED ${r.failed}` : ''}`,
  );
  const [one, two] = result.throughput;
  if (one && two) lines.push(`  two / one process: ${(two.turnsPerSecond / one.turnsPerSecond).toFixed(2)}× (goal ≥ 1.6× on a machine with the cores for it)`);
  const t = result.takeover;
  lines.push(
    `  takeover after SIGKILL over ${t.kills} kills: reply stored p50 ${t.stored.p50Ms.toFixed(0)} ms, p99 ${t.stored.p99Ms.toFixed(0)} ms, max ${t.stored.maxMs.toFixed(0)} ms (goal ≤ 3000 ms); ` +
      `retried run showed it p50 ${t.retried.p50Ms.toFixed(0)} ms, p99 ${t.retried.p99Ms.toFixed(0)} ms${t.failed ? `  FAILED ${t.failed}` : ''}`,
  );
  lines.push(`  kill → stored, by round: ${t.storedMs.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  return lines;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const result = await measureScale({ quick: process.argv.includes('--quick') });
  for (const line of describeScale(result)) console.log(line);
}
