/**
 * Palaver benchmarks. `npm run bench` (= `node --import tsx bench/run.ts`).
 *
 * 1. Turn throughput: Palaver (SQLite file, WAL; or PostgreSQL) vs a bare `openai` SDK tool loop, against the scripted
 *    model server with zero latency (Chat Completions or Responses), at concurrency 1 and 64, a new person every 10
 *    turns. Each turn: user message → model asks for `lookup` → tool → answer.
 * 2. MCP round trip: `McpToolHost.call` to the example logistics server vs an in-process `LocalToolHost` call.
 * 3. Start-up and idle memory of `palaver start --demo` (bench/start-demo.ts): spawn → first 200 from /health, then
 *    RSS after 100 web conversations over real HTTP (AG-UI, SSE), 3 s and 40 s into the idleness that follows.
 * 4. Turn time against the conversation's length (bench/history-turns.ts): a session of 10 stored messages against one
 *    of 100,000, turns interleaved, with the conversation cache as shipped and expiring after every turn; on SQLite in
 *    one process, and with --history-backends also on PostgreSQL, with the tool over Redis Streams, and in two
 *    processes on one PostgreSQL database taking each conversation over from each other turn by turn.
 * 5. The inbox under load (bench/inbox-load.ts): 10,000 conversations at once, each with a burst of three messages
 *    pending, and bursts against the quiet window.
 * 7. Tool calls over Redis Streams (bench/dispatch-calls.ts): round trip from XADD to the worker's result read back,
 *    with one and two `palaver worker` processes (bench/dispatch-worker.ts) on the machine's Redis (127.0.0.1:6379).
 * 6. Telegram idle memory (bench/telegram-idle.ts): `palaver start --demo` with the Telegram channel on against a
 *    local fake Bot API, 100 chats answered, then the resident set after 3 s and 40 s of idleness.
 * 8. Telegram user account (bench/telegram-user.ts): `palaver start --demo` with the user-account channel on the fake
 *    MTProto server: burst (three messages) → reply latency against the quiet window, and idle memory.
 * 9. Replies as actions (bench/reply-actions.ts): checking and carrying out a typical five-action plan, per turn, in
 *    this process (storing it excluded).
 * 10. Several processes on one PostgreSQL database (bench/scale.ts): web-chat turns/s with one and with two
 *    `palaver start` processes (requests round-robin, a model with a fixed 20 ms latency), and the time from a SIGKILL
 *    of the process whose turn waits on the model to the other process's stored reply, p50/p99 over 20 kills.
 * 11. Latency a person feels (bench/latency.ts): `palaver start` (dist, SQLite) with a model streaming word by word;
 *    web chat over real HTTP at 1 and 64 conversations, message → first streamed token, and Telegram bot bursts →
 *    first draft, each minus the model's own time to first byte (and the quiet window), p50/p99.
 *
 * Every scenario runs in its own child process (bench/<scenario>.ts bundled into .bench/<scenario>.mjs, run with plain `node`), so its peak RSS is its
 * own; the servers (scripted model, MCP) run here, in the parent, i.e. in another process on the same machine.
 * The two turn scenarios of a run live side by side: both warm up, then run their measured turns in alternating
 * chunks of about a second, so both see the same moments of a machine whose speed drifts.
 *
 * Flags: --quick (smoke run) · --turns N (turns per scenario) · --warmup N (turns before measuring, default 500)
 *        --runs N (default 3; the median run is reported) · --concurrency 1,64 · --only turns|mcp|start|inbox|history|telegram|telegram-user|dispatch|actions|scale|latency
 *        --json <file> (raw numbers) · --cpu-prof (profiles of each measured phase, in a temp dir)
 *        --bare-transport (the bare loop's SDK over Palaver's fetch, undici's on an Agent: what Palaver's own work costs per turn)
 *        --history-backends sqlite,postgres,streams,two-processes (the history scenario's variants; default sqlite;
 *        postgres and two-processes need PostgreSQL as for --only scale, streams the Redis at 127.0.0.1:6379)
 *        --inbox-conversations N (the inbox scenario's crowd; 100000 is the large run, see bench/inbox-load.ts)
 *        --turn-apis chat,responses · --turn-backends sqlite,postgres (the turn scenarios' variants, each combination
 *        measured and reported on its own; default chat and sqlite) · --turns-per-person N (default 10)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { buildSync } from 'esbuild';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLogisticsMcpServer } from '../examples/logistics/mcp-server.js';
import { measureInboxLoad, type InboxLoadResult } from './inbox-load.js';
import { measureReplyActions, type ReplyActionsResult } from './reply-actions.js';
import {
  describeTelegramLatency,
  describeWebLatency,
  measureTelegramLatency,
  measureWebLatency,
  type TelegramLatencyResult,
  type WebLatencyResult,
} from './latency.js';
import { describeScale, measureScale, type ScaleResult } from './scale.js';
import { measureStartDemo, type StartDemoResult } from './start-demo.js';
import { measureTelegramIdle, type TelegramIdleResult } from './telegram-idle.js';
import { measureTelegramUser, type TelegramUserResult } from './telegram-user.js';
import { benchScript, startScriptedModelServer } from '../src/testing/index.js';
import { createBenchPostgresDatabase } from './bench-postgres.js';
import type { HistoryRunSample, HistoryScenarioArgs, HistoryScenarioResult, HistoryVariant } from './history-turns.js';
import type { TurnApi, TurnBackend, TurnScenarioArgs } from './workload.js';
import { mergeMeasurements, scenarioResult, summarize, type ChunkCommand, type ChunkReply, type RunMeasurement, type ScenarioResult } from './stats.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(benchDir, '..');

interface Options {
  quick: boolean;
  turns: number | undefined;
  runs: number;
  concurrency: number[];
  only: 'turns' | 'mcp' | 'start' | 'inbox' | 'history' | 'telegram' | 'telegram-user' | 'dispatch' | 'actions' | 'scale' | 'latency' | undefined;
  json: string | undefined;
  cpuProf: boolean;
  warmup: number | undefined;
  /** The bare loop's SDK gets Palaver's fetch (undici's on an Agent) instead of the global one: Palaver's own cost per turn. */
  bareTransport: boolean;
  /** The history scenario's variants, in this order. */
  historyBackends: HistoryVariant[];
  /** Conversations in the inbox scenario's crowd (default 10,000; 1,000 with --quick). */
  inboxConversations: number | undefined;
  /** The turn scenarios' model APIs and Palaver's databases: every combination is measured. */
  turnApis: TurnApi[];
  turnBackends: TurnBackend[];
  /** Turns each person has before the next person takes their place (first contact counts every this many turns). */
  turnsPerPerson: number;
}

const HISTORY_VARIANTS: readonly HistoryVariant[] = ['sqlite', 'postgres', 'streams', 'two-processes'];
const TURN_APIS: readonly TurnApi[] = ['chat', 'responses'];
const TURN_BACKENDS: readonly TurnBackend[] = ['sqlite', 'postgres'];

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    quick: false,
    turns: undefined,
    runs: 3,
    concurrency: [1, 64],
    only: undefined,
    json: undefined,
    cpuProf: false,
    warmup: undefined,
    bareTransport: false,
    historyBackends: ['sqlite'],
    inboxConversations: undefined,
    turnApis: ['chat'],
    turnBackends: ['sqlite'],
    turnsPerPerson: 10,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = (): string => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--quick':
        options.quick = true;
        break;
      case '--turns':
        options.turns = positiveInt(flag, value());
        break;
      case '--warmup':
        options.warmup = positiveInt(flag, value());
        break;
      case '--runs':
        options.runs = positiveInt(flag, value());
        break;
      case '--concurrency':
        options.concurrency = value()
          .split(',')
          .map((part) => positiveInt(flag, part));
        break;
      case '--only': {
        const only = value();
        if (
          only !== 'turns' &&
          only !== 'mcp' &&
          only !== 'start' &&
          only !== 'inbox' &&
          only !== 'history' &&
          only !== 'telegram' &&
          only !== 'telegram-user' &&
          only !== 'dispatch' &&
          only !== 'actions' &&
          only !== 'scale' &&
          only !== 'latency'
        ) {
          throw new Error('--only takes turns, mcp, start, inbox, history, telegram, telegram-user, dispatch, actions, scale or latency');
        }
        options.only = only;
        break;
      }
      case '--json':
        options.json = value();
        break;
      case '--cpu-prof':
        options.cpuProf = true;
        break;
      case '--bare-transport':
        options.bareTransport = true;
        break;
      case '--history-backends':
        options.historyBackends = value()
          .split(',')
          .map((name) => {
            if (!(HISTORY_VARIANTS as readonly string[]).includes(name))
              throw new Error(`--history-backends takes a list of ${HISTORY_VARIANTS.join(', ')}, not ${name}`);
            return name as HistoryVariant;
          });
        break;
      case '--inbox-conversations':
        options.inboxConversations = positiveInt(flag, value());
        break;
      case '--turn-apis':
        options.turnApis = listOf(flag, value(), TURN_APIS);
        break;
      case '--turn-backends':
        options.turnBackends = listOf(flag, value(), TURN_BACKENDS);
        break;
      case '--turns-per-person':
        options.turnsPerPerson = positiveInt(flag, value());
        break;
      case '--help':
      // biome-ignore lint/suspicious/noFallthroughSwitchClause: process.exit never returns
      case '-h':
        console.log(
          'Usage: npm run bench -- [--quick] [--turns N] [--warmup N] [--runs N] [--concurrency 1,64] [--only turns|mcp|start|inbox|history|telegram|telegram-user|dispatch|actions|scale|latency] [--json file] [--cpu-prof] [--bare-transport] [--history-backends sqlite,postgres,streams,two-processes] [--inbox-conversations N] [--turn-apis chat,responses] [--turn-backends sqlite,postgres] [--turns-per-person N]',
        );
        process.exit(0);
      default:
        throw new Error(`Unknown flag ${flag}; try --help`);
    }
  }
  if (options.quick && options.runs === 3) options.runs = 1;
  return options;
}

function listOf<T extends string>(flag: string | undefined, text: string, allowed: readonly T[]): T[] {
  return text.split(',').map((name) => {
    if (!(allowed as readonly string[]).includes(name)) throw new Error(`${flag} takes a list of ${allowed.join(', ')}, not ${name}`);
    return name as T;
  });
}

function positiveInt(flag: string | undefined, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${flag} takes a positive integer, not ${text}`);
  return value;
}

const options = parseOptions(process.argv.slice(2));
const profileDir = options.cpuProf ? mkdtempSync(join(tmpdir(), 'palaver-bench-prof-')) : undefined;

/** Turns per scenario: --turns, else 2000 at high concurrency and 500 at c=1 (a tenth with --quick). */
const turnsFor = (concurrency: number): number => options.turns ?? (options.quick ? (concurrency === 1 ? 100 : 200) : concurrency === 1 ? 2000 : 3000);
// Long enough for both sides' hot code to be compiled by the optimising JIT: the figures are of a server's steady
// state, not of its first seconds.
const warmupTurns = options.warmup ?? (options.quick ? 20 : 500);
const mcpCalls = (concurrency: number): number => (options.quick ? 200 : concurrency === 1 ? 1000 : 4000);
const mcpConcurrency = [1, 16];
const dispatchWorkers = [1, 2];
const dispatchConcurrency = [1, 64];

interface RunRecord extends ScenarioResult {
  readonly run: number;
  readonly loadBefore: number;
  readonly loadAfter: number;
}

/**
 * The scenario child as plain JavaScript: bench/<file>.ts with the bench's own TypeScript bundled by esbuild into
 * .bench/<file>.mjs (node_modules and Palaver's dist stay outside, loaded as they ship). Children run under plain
 * `node`: under tsx's loader every compiled dist module Palaver loads got an inline source map attached and kept,
 * which the bare loop (all in node_modules, which tsx leaves alone) never paid.
 */
const compiledChildren = new Map<string, string>();
function childEntry(file: string): string {
  let entry = compiledChildren.get(file);
  if (entry === undefined) {
    // .bench/ sits beside bench/, so `new URL('../dist/…', import.meta.url)` in a child still finds dist.
    entry = join(repoRoot, '.bench', file.replace(/\.ts$/, '.mjs'));
    buildSync({
      entryPoints: [join(benchDir, file)],
      outfile: entry,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      logLevel: 'warning',
    });
    compiledChildren.set(file, entry);
  }
  return entry;
}

/** Spawns one scenario child and resolves with what it reports. */
function runChild(file: string, params: unknown): Promise<ScenarioResult> {
  const withProfile = profileDir ? { ...(params as object), profileDir } : params;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--no-warnings', childEntry(file), JSON.stringify(withProfile)], {
      cwd: repoRoot,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: ScenarioResult | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), 15 * 60_000);
    child.on('message', (message) => {
      result = message as ScenarioResult;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (result) resolvePromise(result);
      else reject(new Error(`${file} exited (${signal ?? code}) without a result`));
    });
  });
}

async function measure(label: string, run: number, start: () => Promise<ScenarioResult>): Promise<RunRecord> {
  const loadBefore = loadavg()[0]!;
  const result = await start();
  return report(label, { ...result, run, loadBefore, loadAfter: loadavg()[0]! });
}

/** Prints one run's line. */
function report(label: string, record: RunRecord): RunRecord {
  const failed = Number(record.extra?.failed ?? 0);
  const listenerWarnings = Number(record.extra?.listenerWarnings ?? 0);
  console.log(
    `  ${label.padEnd(24)} run ${record.run}: ${record.perSecond.toFixed(0).padStart(6)}/s  p50 ${record.latency.p50Ms.toFixed(2)} ms  p99 ${record.latency.p99Ms.toFixed(2)} ms  CPU ${record.cpuMsPerOp.toFixed(3)} ms/op (main thread ${record.mainThreadCpuMsPerOp?.toFixed(3) ?? '?'})  ` +
      `RSS ${record.peakRssMb.toFixed(0)} MB  load ${record.loadBefore.toFixed(1)}→${record.loadAfter.toFixed(1)}${failed ? `  FAILED ${failed}` : ''}` +
      (listenerWarnings
        ? `  ⚠ ${listenerWarnings}× MaxListenersExceededWarning (up to ${String(record.extra?.mostAbortListeners)} abort listeners on one AbortSignal)`
        : ''),
  );
  return record;
}

/** A turn scenario child that runs its measured phase in chunks when told (see `serveChunks` in bench/stats.ts). */
class ChunkedScenario {
  readonly #child: ChildProcess;
  readonly #replies: ChunkReply[] = [];
  #wake: (() => void) | undefined;
  #exited: Error | undefined;

  constructor(file: string, params: unknown) {
    const withProfile = profileDir ? { ...(params as object), profileDir } : params;
    this.#child = spawn(process.execPath, ['--no-warnings', childEntry(file), JSON.stringify(withProfile)], {
      cwd: repoRoot,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.on('message', (reply: ChunkReply) => {
      this.#replies.push(reply);
      this.#wake?.();
    });
    this.#child.on('exit', (code, signal) => {
      this.#exited = new Error(`${file} exited (${signal ?? code})`);
      this.#wake?.();
    });
  }

  async next<T extends ChunkReply['type']>(type: T): Promise<Extract<ChunkReply, { type: T }>> {
    while (this.#replies.length === 0) {
      if (this.#exited) throw this.#exited;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
    const reply = this.#replies.shift()!;
    if (reply.type !== type) throw new Error(`expected ${type} from the scenario, got ${reply.type}`);
    return reply as Extract<ChunkReply, { type: T }>;
  }

  async chunk(turns: number): Promise<RunMeasurement> {
    this.#child.send({ type: 'chunk', turns } satisfies ChunkCommand);
    return (await this.next('chunk')).measurement;
  }

  async done(): Promise<Extract<ChunkReply, { type: 'done' }>> {
    this.#child.send({ type: 'done' } satisfies ChunkCommand);
    return this.next('done');
  }

  kill(): void {
    this.#child.kill('SIGKILL');
  }
}

/** One model API and one database for Palaver: the turn scenarios run once per variant asked for. */
interface TurnVariant {
  readonly api: TurnApi;
  readonly backend: TurnBackend;
}

const turnVariantLabel = (variant: TurnVariant): string =>
  `${variant.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${variant.api === 'chat' ? 'Chat Completions' : 'Responses'}`;

/**
 * One run of both turn scenarios at `concurrency`. Both children start and warm up, then run the measured turns in
 * chunks of about a second each, alternating sides (and which side goes first), so the machine's drift between
 * seconds falls on both; each side's figures are its chunks added up. On PostgreSQL, Palaver gets a database of its
 * own for the run.
 */
async function measureTurnPair(variant: TurnVariant, concurrency: number, run: number): Promise<RunRecord[]> {
  const turns = turnsFor(concurrency);
  const chunks = Math.max(1, Math.round(turns / chunkTurns(concurrency)));
  // Responses chains: every person's last response must still be there at their next turn.
  const servers = await Promise.all(
    SIDES.map(() => startScriptedModelServer({ script: benchScript, maxRecordedCalls: 100, maxStoredResponses: variant.api === 'responses' ? 100_000 : 100 })),
  );
  const database = variant.backend === 'postgres' ? await createBenchPostgresDatabase() : undefined;
  const children = SIDES.map((side, index) => {
    const args: TurnScenarioArgs = {
      baseUrl: servers[index]!.baseUrl,
      concurrency,
      turns,
      warmupTurns,
      api: variant.api,
      turnsPerPerson: options.turnsPerPerson,
      ...(side === 'palaver' && database ? { databaseUrl: database.url } : {}),
      ...(options.bareTransport ? { palaverTransport: true } : {}),
    };
    return new ChunkedScenario(`turns-${side}.ts`, args);
  });
  try {
    const loadBefore = loadavg()[0]!;
    // Warm-up runs in both at once: it is not measured.
    await Promise.all(children.map((child) => child.next('ready')));
    const parts: RunMeasurement[][] = SIDES.map(() => []);
    for (let chunk = 0; chunk < chunks; chunk += 1) {
      const share = Math.floor(turns / chunks) + (chunk < turns % chunks ? 1 : 0);
      const order = (chunk + run) % 2 === 0 ? [0, 1] : [1, 0];
      for (const index of order) parts[index]!.push(await children[index]!.chunk(share));
    }
    const finals = await Promise.all(children.map((child) => child.done()));
    const loadAfter = loadavg()[0]!;
    return SIDES.map((side, index) => {
      const result = { ...scenarioResult(side, concurrency, mergeMeasurements(parts[index]!), finals[index]!.extra), peakRssMb: finals[index]!.peakRssMb };
      return report(`${side} c=${concurrency} (${turnVariantLabel(variant)})`, { ...result, run, loadBefore, loadAfter });
    });
  } finally {
    for (const child of children) child.kill();
    await Promise.all(servers.map((server) => server.close()));
    await database?.drop();
  }
}

const SIDES = ['bare', 'palaver'] as const;

/** Turns per chunk: about a second of work at either concurrency. */
const chunkTurns = (concurrency: number): number => (options.quick ? 50 : concurrency === 1 ? 250 : 750);

/** The median run (by throughput) of each scenario+concurrency; of two, the better. */
function median(records: readonly RunRecord[], scenario: string, concurrency: number): RunRecord | undefined {
  const runs = records.filter((r) => r.scenario === scenario && r.concurrency === concurrency).sort((a, b) => b.perSecond - a.perSecond);
  return runs[Math.floor((runs.length - 1) / 2)];
}

function middle(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[half]! : (sorted[half - 1]! + sorted[half]!) / 2;
}

/**
 * Palaver's throughput relative to the bare loop: the median over runs of each run's ratio. The two sides of one run
 * are measured back to back, so a machine that speeds up or slows down between runs moves both.
 */
function pairedRatio(records: readonly RunRecord[], concurrency: number, value: (r: RunRecord) => number): number | undefined {
  const ratios = runRatios(records, concurrency, value);
  return ratios.length > 0 ? middle(ratios) : undefined;
}

/** Palaver / bare of each run, in run order. */
function runRatios(records: readonly RunRecord[], concurrency: number, value: (r: RunRecord) => number): number[] {
  const ratios: number[] = [];
  for (const palaver of records.filter((r) => r.scenario === 'palaver' && r.concurrency === concurrency)) {
    const bare = records.find((r) => r.scenario === 'bare' && r.concurrency === concurrency && r.run === palaver.run);
    if (bare) ratios.push(value(palaver) / value(bare));
  }
  return ratios;
}

function spread(records: readonly RunRecord[], scenario: string, concurrency: number): string {
  const rates = records.filter((r) => r.scenario === scenario && r.concurrency === concurrency).map((r) => r.perSecond);
  if (rates.length < 2) return '';
  const max = Math.max(...rates);
  const min = Math.min(...rates);
  return `${(((max - min) / max) * 100).toFixed(0)}%`;
}

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  return [line(headers), `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...rows.map(line)].join('\n');
}

const machine = {
  date: new Date().toISOString(),
  cpu: cpus()[0]?.model.trim() ?? 'unknown',
  cores: cpus().length,
  totalMemoryGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
  os: `${osType()} ${release()}`,
  node: process.version,
  loadAverage: loadavg().map((value) => Math.round(value * 100) / 100),
};
console.log(`Palaver benchmarks — ${machine.date}`);
console.log(`Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.totalMemoryGb} GB RAM, ${machine.os}, Node ${machine.node}`);
console.log(
  `Load average at start (1/5/15 min): ${machine.loadAverage.join(' / ')}${machine.loadAverage[0]! > machine.cores * 0.5 ? '  ⚠ the machine is busy; numbers will be noisy' : ''}`,
);
console.log(
  `Mode: ${options.quick ? 'quick' : 'full'}, ${options.runs} run(s) per scenario, the median run reported${profileDir ? `, CPU profiles in ${profileDir}` : ''}\n`,
);

if (options.only !== 'mcp' && options.only !== 'dispatch' && options.only !== 'actions') {
  // The turn and start-up scenarios runs Palaver's compiled output, as an application would; compile the current sources first.
  console.log('Building Palaver (npm run build: the types, then the bundle of src/) …');
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build.mjs')], { cwd: repoRoot, stdio: 'inherit' });
}

const turnVariants: TurnVariant[] = options.turnBackends.flatMap((backend) => options.turnApis.map((api) => ({ api, backend })));
/** Each variant's runs, by its label. */
const turnRecords = new Map<string, RunRecord[]>();
const mcpRecords: RunRecord[] = [];

if (options.only === undefined || options.only === 'turns') {
  console.log(
    `Turn throughput (scripted model, zero latency; each worker's person replaced by a new one every ${options.turnsPerPerson} turns; the two sides' chunks interleaved):`,
  );
  for (const variant of turnVariants) {
    const records: RunRecord[] = [];
    turnRecords.set(turnVariantLabel(variant), records);
    for (const concurrency of options.concurrency) {
      for (let run = 1; run <= options.runs; run += 1) records.push(...(await measureTurnPair(variant, concurrency, run)));
    }
  }
}

if (options.only === undefined || options.only === 'mcp') {
  console.log('\nTool call round trip (get_user_cargoes):');
  const token = 'bench-token-0123456789';
  const server = await startLogisticsMcpServer({ port: 0, token });
  try {
    for (const concurrency of mcpConcurrency) {
      for (let run = 1; run <= options.runs; run += 1) {
        for (const host of ['local', 'mcp'] as const) {
          const params = { host, url: server.url, token, concurrency, calls: mcpCalls(concurrency), warmupCalls: options.quick ? 20 : 100 };
          mcpRecords.push(await measure(`${host} c=${concurrency}`, run, () => runChild('mcp-calls.ts', params)));
        }
      }
    }
  } finally {
    await server.close();
  }
}

const startRecords: (StartDemoResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'start') {
  console.log('\nStart-up and idle memory of `palaver start --demo` (100 web conversations, then 3 s idle):');
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureStartDemo({ conversations: options.quick ? 20 : 100 });
    startRecords.push({ ...result, run });
    console.log(
      `  run ${run}: /health after ${result.startupMs.toFixed(0)} ms, ${result.startupCpuMs.toFixed(0)} ms of CPU (listening after ${result.listeningMs.toFixed(0)} ms), RSS ${result.rssAfterStartMb.toFixed(0)} MB after start, ` +
        `${result.idleRssMb.toFixed(0)} MB 3 s and ${result.settledRssMb.toFixed(0)} MB 40 s after ${result.conversations} conversations (${result.conversationsMs.toFixed(0)} ms), peak ${result.peakRssMb.toFixed(0)} MB${result.failed ? `  FAILED ${result.failed}` : ''}`,
    );
  }
}

const ms = (value: number): string => value.toFixed(2);
for (const [label, records] of turnRecords) {
  const rows: string[][] = [];
  for (const concurrency of options.concurrency) {
    for (const scenario of ['bare', 'palaver'] as const) {
      const r = median(records, scenario, concurrency);
      if (!r) continue;
      const mainThread = r.mainThreadCpuMsPerOp === undefined ? '?' : ms(r.mainThreadCpuMsPerOp);
      rows.push([
        scenario === 'bare' ? 'bare openai loop' : 'Palaver',
        String(concurrency),
        String(r.operations),
        r.perSecond.toFixed(0),
        ms(r.latency.p50Ms),
        ms(r.latency.p99Ms),
        ms(r.cpuMsPerOp),
        mainThread,
        r.peakRssMb.toFixed(0),
        spread(records, scenario, concurrency),
      ]);
    }
  }
  console.log(`\nTurn throughput, ${label} (median of ${options.runs} run(s) of each):\n`);
  console.log(
    table(['scenario', 'concurrency', 'turns', 'turns/s', 'p50 ms', 'p99 ms', 'CPU ms/turn', 'main thread ms/turn', 'peak RSS MB', 'run spread'], rows),
  );
  console.log('');
  for (const concurrency of options.concurrency) {
    const ratio = pairedRatio(records, concurrency, (r) => r.perSecond);
    const cpuRatio = pairedRatio(records, concurrency, (r) => r.mainThreadCpuMsPerOp ?? r.cpuMsPerOp);
    if (ratio === undefined || cpuRatio === undefined) continue;
    const byRun = runRatios(records, concurrency, (r) => r.perSecond).map((value) => (value * 100).toFixed(0));
    // Issue 26's goals: 0.85× the bare loop at one conversation and 1.0× at many, Palaver's peak RSS no higher than its.
    const goal = concurrency === 1 ? 0.85 : 1.0;
    const palaverRss = median(records, 'palaver', concurrency)?.peakRssMb;
    const bareRss = median(records, 'bare', concurrency)?.peakRssMb;
    const rssAbove = palaverRss !== undefined && bareRss !== undefined ? palaverRss - bareRss : undefined;
    console.log(
      `${label}: Palaver / bare at c=${concurrency}: ${(ratio * 100).toFixed(0)}% of the throughput, median of per-run ratios (goal ≥ ${goal * 100}%: ${ratio >= goal ? 'met' : 'NOT met'}; ` +
        `by run: ${byRun.join(', ')} %); main-thread CPU per turn ${cpuRatio.toFixed(2)}× the bare loop's` +
        (rssAbove === undefined
          ? ''
          : `; peak RSS ${rssAbove >= 0 ? '+' : ''}${rssAbove.toFixed(0)} MB against the bare loop (goal ≤ +0 MB: ${rssAbove <= 0 ? 'met' : 'NOT met'})`),
    );
  }
}

if (mcpRecords.length > 0) {
  const rows: string[][] = [];
  const overheads: string[] = [];
  for (const concurrency of mcpConcurrency) {
    const local = median(mcpRecords, 'local', concurrency);
    const mcp = median(mcpRecords, 'mcp', concurrency);
    for (const [label, r] of [
      ['LocalToolHost (floor)', local],
      ['McpToolHost (HTTP)', mcp],
    ] as const) {
      if (r)
        rows.push([
          label,
          String(concurrency),
          String(r.operations),
          r.perSecond.toFixed(0),
          ms(r.latency.p50Ms),
          ms(r.latency.p99Ms),
          ms(r.cpuMsPerOp),
          r.peakRssMb.toFixed(0),
        ]);
    }
    if (local && mcp) {
      overheads.push(
        `MCP overhead per call at c=${concurrency}: p50 +${ms(mcp.latency.p50Ms - local.latency.p50Ms)} ms, p99 +${ms(mcp.latency.p99Ms - local.latency.p99Ms)} ms, ` +
          `throughput-based +${ms(1000 / mcp.perSecond - 1000 / local.perSecond)} ms of wall time per call`,
      );
    }
  }
  console.log(`\nTool call round trip (median of ${options.runs} run(s) of each):\n`);
  console.log(table(['host', 'concurrency', 'calls', 'calls/s', 'p50 ms', 'p99 ms', 'CPU ms/call', 'peak RSS MB'], rows));
  console.log('');
  for (const line of overheads) console.log(line);
}

const dispatchRecords: RunRecord[] = [];
const turnRatioRecords: RunRecord[] = [];
if (options.only === 'dispatch') {
  // Not part of the default run: it needs the Redis server at 127.0.0.1:6379 (see STACK.md, services on loopback).
  const redisUrl = 'redis://127.0.0.1:6379';
  const keyPrefix = `bench:${process.pid}-${Date.now()}:`;
  const calls = (concurrency: number): number => options.turns ?? (options.quick ? 500 : concurrency === 1 ? 3_000 : 20_000);
  console.log(`\nTool calls over Redis Streams (echo; round trip from XADD to the result read back; keys under ${keyPrefix}):`);
  for (const workerCount of dispatchWorkers) {
    const workers = Array.from({ length: workerCount }, () =>
      spawn(process.execPath, ['--no-warnings', childEntry('dispatch-worker.ts'), JSON.stringify({ redisUrl, keyPrefix })], {
        cwd: repoRoot,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    try {
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise<void>((resolvePromise, reject) => {
              worker.once('message', () => resolvePromise());
              worker.once('exit', (code) => reject(new Error(`dispatch worker exited (${code}) before it was ready`)));
            }),
        ),
      );
      for (const concurrency of dispatchConcurrency) {
        for (let run = 1; run <= options.runs; run += 1) {
          // The wire alone, then the runtime's path (dispatcher, outbox, relay) right after, in the same phase.
          for (const via of ['wire', 'runtime'] as const) {
            const params = {
              redisUrl,
              keyPrefix,
              workers: workerCount,
              concurrency,
              via,
              calls: calls(concurrency),
              warmupCalls: options.warmup ?? (options.quick ? 100 : 2_000),
            };
            // The workers' CPU time per call: on a busy machine wall-clock figures say more about the neighbours.
            const cpuBefore = workers.map((worker) => processCpuMs(worker.pid!));
            const label = `${via === 'wire' ? '' : 'runtime '}workers=${workerCount}`;
            const record = await measure(`${label} c=${concurrency}`, run, () => runChild('dispatch-calls.ts', params));
            const workerCpuMs = workers.reduce((sum, worker, index) => sum + processCpuMs(worker.pid!) - cpuBefore[index]!, 0);
            // Warm-up calls ran in the same window: count them too.
            const workerCpuMsPerCall = workerCpuMs / (record.operations + params.warmupCalls);
            console.log(`    workers' CPU: ${workerCpuMsPerCall.toFixed(3)} ms per call (all workers together)`);
            dispatchRecords.push({ ...record, extra: { ...record.extra, workerCpuMsPerCall } });
          }
        }
      }
      if (workerCount === 1) {
        // A turn with one streamed tool call against the inline turn (c=1, the two interleaved in one process).
        for (let run = 1; run <= options.runs; run += 1) {
          const params = { redisUrl, keyPrefix, workers: workerCount, turns: options.quick ? 100 : 500, warmupTurns: options.quick ? 20 : 100 };
          const record = await measure('turn streams/inline', run, () => runChild('dispatch-turns.ts', params));
          const extra = record.extra ?? {};
          console.log(
            `    turn p50: inline ${ms(Number(extra['inlineP50Ms']))} ms, streams ${ms(Number(extra['streamsP50Ms']))} ms → ${Number(extra['ratioP50']).toFixed(2)}× (mean ${Number(extra['ratioMean']).toFixed(2)}×)`,
          );
          turnRatioRecords.push(record);
        }
      }
    } finally {
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise((resolvePromise) => {
              if (worker.exitCode !== null) return resolvePromise(undefined);
              worker.once('exit', resolvePromise);
              worker.kill('SIGTERM');
            }),
        ),
      );
    }
  }
  const { connectRedis } = await import('../src/platform/redis-connection.js');
  const redis = await connectRedis({ url: redisUrl, keyPrefix });
  for await (const keys of redis.client.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) if (keys.length > 0) await redis.client.del(keys);
  await redis.close();

  const rows: string[][] = [];
  for (const via of ['wire', 'runtime'] as const) {
    for (const workerCount of dispatchWorkers) {
      for (const concurrency of dispatchConcurrency) {
        const r = median(dispatchRecords, `${via === 'wire' ? '' : 'runtime '}workers=${workerCount}`, concurrency);
        if (r)
          rows.push([
            via,
            String(workerCount),
            String(concurrency),
            String(r.operations),
            r.perSecond.toFixed(0),
            ms(r.latency.p50Ms),
            ms(r.latency.p99Ms),
            ms(r.cpuMsPerOp),
            ms(Number(r.extra?.workerCpuMsPerCall ?? 0)),
          ]);
      }
    }
  }
  console.log(`\nTool calls over Redis Streams (median of ${options.runs} run(s) of each):\n`);
  console.log(table(['path', 'workers', 'concurrency', 'calls', 'calls/s', 'p50 ms', 'p99 ms', 'client CPU ms/call', 'workers CPU ms/call'], rows));
  for (const via of ['wire', 'runtime'] as const) {
    const prefix = via === 'wire' ? '' : 'runtime ';
    const one = median(dispatchRecords, `${prefix}workers=1`, 1);
    const best = Math.max(...dispatchConcurrency.map((concurrency) => median(dispatchRecords, `${prefix}workers=2`, concurrency)?.perSecond ?? 0));
    if (one)
      console.log(
        `Goals (${via}): p50 < 2 ms (${ms(one.latency.p50Ms)}: ${one.latency.p50Ms < 2 ? 'met' : 'NOT met'}), p99 < 10 ms (${ms(one.latency.p99Ms)}: ${one.latency.p99Ms < 10 ? 'met' : 'NOT met'}) at c=1; > 5,000 calls/s with 2 workers (${best.toFixed(0)}: ${best > 5_000 ? 'met' : 'NOT met'})`,
      );
  }
  const ratios = turnRatioRecords.map((record) => Number(record.extra?.['ratioP50'])).sort((a, b) => a - b);
  if (ratios.length > 0) {
    const ratio = ratios[Math.floor((ratios.length - 1) / 2)]!;
    console.log(
      `Goal: a turn with one streamed tool call within 1.2× the inline turn (p50 ratio, median of ${ratios.length} run(s): ${ratio.toFixed(2)}×: ${ratio <= 1.2 ? 'met' : 'NOT met'})`,
    );
  }
}

/** User + system CPU time of a process so far, in ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

const inboxRecords: (InboxLoadResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'inbox') {
  const conversations = options.inboxConversations ?? (options.quick ? 1_000 : 10_000);
  // Peak RSS goals of issue #26: < 200 MB at 10,000 conversations, < 1 GB at 100,000 (other sizes: none).
  const peakGoalMb = conversations === 10_000 ? 200 : conversations === 100_000 ? 1024 : undefined;
  console.log(
    `\nThe inbox under load (${conversations} conversations at once, each with a burst of three pending; bursts of three against a 2500 ms quiet window):`,
  );
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureInboxLoad({ conversations, bursts: options.quick ? 8 : 40 });
    inboxRecords.push({ ...result, run });
    console.log(
      `  run ${run}: ${result.answered} messages answered once, ${result.lost} lost, ${result.duplicates} answered twice${result.failed ? `, ${result.failed} FAILED` : ''}; ` +
        `${result.oneReply}/${result.conversations} bursts in one reply (crowd quiet window ${result.crowdQuietWindowMs} ms); accepted in ${(result.acceptMs / 1000).toFixed(1)} s, drained in ${(result.drainMs / 1000).toFixed(1)} s; ` +
        `peak RSS ${result.peakRssMb.toFixed(0)} MB${peakGoalMb === undefined ? '' : ` (goal < ${peakGoalMb} MB: ${result.peakRssMb < peakGoalMb ? 'met' : 'NOT met'})`} from ${result.startRssMb.toFixed(0)} MB at start; ` +
        `last message of a burst → reply sent: p50 ${result.burstLatency.p50Ms.toFixed(0)} ms, ` +
        `p99 ${result.burstLatency.p99Ms.toFixed(0)} ms (goal ≤ ${result.quietWindowMs + 50} ms: ${result.burstLatency.p99Ms <= result.quietWindowMs + 50 ? 'met' : 'NOT met'}), ${result.burstTurns}/${result.bursts} bursts answered`,
    );
  }
}

const historyResults: HistoryScenarioResult[] = [];
if (options.only === undefined || options.only === 'history') {
  const stored: [number, number] = [10, 100_000];
  const turns = options.turns ?? (options.quick ? 30 : 150);
  const warmupTurns = options.warmup ?? (options.quick ? 20 : 150);
  console.log(
    `\nTurn time at ${stored[0]} vs ${stored[1].toLocaleString('en')} stored messages (${options.runs} run(s) of ${turns} turns per user, the users' turns interleaved; ${options.historyBackends.join(', ')}):`,
  );
  const server = await startScriptedModelServer({ script: benchScript, maxRecordedCalls: 100, maxStoredResponses: 100 });
  try {
    for (const variant of options.historyBackends) {
      await withHistoryVariant(variant, async (variantArgs) => {
        for (const [label, cacheTtlMs] of [
          ['cache as shipped', 300_000],
          ['cache expiring: history read from the store every turn', 1],
        ] as const) {
          // A fresh PostgreSQL database per run, dropped after it (also when the run fails).
          const database = variant === 'postgres' || variant === 'two-processes' ? await createBenchPostgresDatabase() : undefined;
          let result: HistoryScenarioResult;
          try {
            const params: HistoryScenarioArgs = {
              baseUrl: server.baseUrl,
              variant,
              stored,
              runs: options.runs,
              turns,
              warmupTurns,
              cacheTtlMs,
              ...variantArgs,
              ...(database ? { databaseUrl: database.url } : {}),
            };
            result = (await runChild('history-turns.ts', params)) as unknown as HistoryScenarioResult;
          } finally {
            await database?.drop();
          }
          historyResults.push(result);
          console.log(
            `  ${variant}, ${label} (set-up ${(result.setupMs / 1000).toFixed(1)} s; at each turn's start ${result.sessions.map((s) => `${s.stored} stored, ${s.historySent} sent`).join(' / ')}${result.failed ? `; FAILED ${result.failed}` : ''}):`,
          );
          for (let run = 1; run <= options.runs; run += 1) {
            const [small, large] = stored.map((count) => result.samples.find((sample) => sample.stored === count && sample.run === run)!);
            const mainThread = (sample: HistoryRunSample): string =>
              sample.mainThreadCpuMs === undefined ? '?' : ms(sample.mainThreadCpuMs / sample.turnMs.length);
            console.log(
              `    run ${run}: p50 ${ms(middle(small!.turnMs))} vs ${ms(middle(large!.turnMs))} ms (×${(middle(large!.turnMs) / middle(small!.turnMs)).toFixed(3)}), ` +
                `CPU ${ms(small!.cpuMs / small!.turnMs.length)} vs ${ms(large!.cpuMs / large!.turnMs.length)} ms/turn (main thread ${mainThread(small!)} vs ${mainThread(large!)})`,
            );
          }
        }
      });
    }
  } finally {
    await server.close();
  }
  const rows: string[][] = [];
  const verdicts: string[] = [];
  historyResults.forEach((result) => {
    const label = `${result.variant}, ${result.cacheTtlMs === 1 ? 'cache expiring every turn' : 'cache as shipped'}`;
    const perRun = (count: number, value: (sample: HistoryRunSample) => number): number[] =>
      result.samples
        .filter((sample) => sample.stored === count)
        .sort((a, b) => a.run - b.run)
        .map(value);
    const p50 = (sample: HistoryRunSample): number => middle(sample.turnMs);
    const cpu = (sample: HistoryRunSample): number => sample.cpuMs / sample.turnMs.length;
    // The main thread alone, where Linux tells it: the process total also counts the checkpointer's copying.
    const mainThread = (sample: HistoryRunSample): number => (sample.mainThreadCpuMs ?? sample.cpuMs) / sample.turnMs.length;
    for (const count of stored) {
      rows.push([
        label,
        count.toLocaleString('en'),
        String(perRun(count, (s) => s.turnMs.length).reduce((a, b) => a + b, 0)),
        ms(middle(perRun(count, p50))),
        ms(middle(perRun(count, (s) => summarize(s.turnMs).p99Ms))),
        ms(middle(perRun(count, cpu))),
        ms(middle(perRun(count, mainThread))),
      ]);
    }
    const ratios = perRun(stored[1], p50).map((value, index) => value / perRun(stored[0], p50)[index]!);
    const cpuRatios = perRun(stored[1], mainThread).map((value, index) => value / perRun(stored[0], mainThread)[index]!);
    const ratio = middle(ratios);
    verdicts.push(
      `${label}: turn time at ${stored[1].toLocaleString('en')} / at ${stored[0]} = ${ratio.toFixed(3)}, median of per-run ratios of p50 (by run: ${ratios.map((r) => r.toFixed(3)).join(', ')}); ` +
        `main-thread CPU per turn ${middle(cpuRatios).toFixed(3)}× (goal within 10 %: ${Math.abs(ratio - 1) <= 0.1 ? 'met' : 'NOT met'})`,
    );
  });
  console.log(`\nTurn time against stored messages (median of ${options.runs} run(s)):\n`);
  console.log(table(['variant, history', 'stored messages', 'turns', 'p50 ms', 'p99 ms', 'CPU ms/turn', 'main thread ms/turn'], rows));
  console.log('');
  for (const line of verdicts) console.log(line);
}

/**
 * Runs `fn` with what a history variant needs beyond a database: for `streams` one `palaver worker`
 * (bench/dispatch-worker.ts) under a fresh key prefix of the machine's Redis, stopped and its keys deleted after; for
 * `two-processes` the compiled peer. Fails at once, naming the service, when Redis cannot be reached.
 */
async function withHistoryVariant(variant: HistoryVariant, fn: (args: Pick<HistoryScenarioArgs, 'streams' | 'peerEntry'>) => Promise<void>): Promise<void> {
  if (variant === 'two-processes') return fn({ peerEntry: childEntry('history-peer.ts') });
  if (variant !== 'streams') return fn({});
  const redisUrl = 'redis://127.0.0.1:6379';
  const keyPrefix = `bench:history-${process.pid}-${Date.now()}:`;
  const { connectRedis } = await import('../src/platform/redis-connection.js');
  const redis = await connectRedis({ url: redisUrl, keyPrefix }); // throws "Cannot connect to Redis at …" when it is not running
  const worker = spawn(process.execPath, ['--no-warnings', childEntry('dispatch-worker.ts'), JSON.stringify({ redisUrl, keyPrefix })], {
    cwd: repoRoot,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    await new Promise<void>((resolvePromise, reject) => {
      worker.once('message', () => resolvePromise());
      worker.once('exit', (code) => reject(new Error(`dispatch worker exited (${code}) before it was ready`)));
    });
    await fn({ streams: { redisUrl, keyPrefix } });
  } finally {
    await new Promise((resolvePromise) => {
      if (worker.exitCode !== null) return resolvePromise(undefined);
      worker.once('exit', resolvePromise);
      worker.kill('SIGTERM');
    });
    for await (const keys of redis.client.scanIterator({ MATCH: `${keyPrefix}*`, COUNT: 1_000 })) if (keys.length > 0) await redis.client.del(keys);
    await redis.close();
  }
}

const telegramRecords: (TelegramIdleResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'telegram') {
  const conversations = options.quick ? 20 : 100;
  console.log(`\nTelegram idle memory of \`palaver start --demo\` with the Telegram channel on (${conversations} chats answered, then idle):`);
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureTelegramIdle(conversations);
    telegramRecords.push({ ...result, run });
    console.log(
      `  run ${run}: ${result.answered}/${result.conversations} chats answered; RSS ${result.rssAfterStartMb.toFixed(0)} MB after start, ${result.idle3sRssMb.toFixed(0)} MB after 3 s idle, ` +
        `${result.idle40sRssMb.toFixed(0)} MB after 40 s idle (${result.idle40sAnonMb.toFixed(0)} MB allocated, ${result.idle40sFileMb.toFixed(0)} MB mapped files), peak ${result.peakRssMb.toFixed(0)} MB`,
    );
  }
  const idle = middle(telegramRecords.map((r) => r.idle40sRssMb));
  const worst = Math.max(...telegramRecords.map((r) => r.idle40sRssMb));
  console.log(
    `Telegram idle after 40 s: median ${idle.toFixed(0)} MB, worst ${worst.toFixed(0)} MB (goal ≤ 75 MB, issue #26: ${worst <= 75 ? 'met in every run' : idle <= 75 ? 'met in the median, NOT in every run' : 'NOT met'})`,
  );
}

const telegramUserRecords: (TelegramUserResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'telegram-user') {
  const bursts = options.quick ? 5 : 20;
  const quietWindowMs = 500;
  console.log(
    `\nTelegram user account (\`palaver start --demo\`, fake MTProto server over loopback): ${bursts} bursts of three messages, quiet window ${quietWindowMs} ms, then idle:`,
  );
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureTelegramUser(bursts, quietWindowMs);
    telegramUserRecords.push({ ...result, run });
    console.log(
      `  run ${run}: ${result.answered}/${result.bursts} bursts answered; burst → reply p50 ${result.latencyP50Ms.toFixed(0)} ms, p95 ${result.latencyP95Ms.toFixed(0)} ms ` +
        `(window + ${result.overheadP50Ms.toFixed(0)} / ${result.overheadP95Ms.toFixed(0)} ms); RSS ${result.rssAfterStartMb.toFixed(0)} MB after start, ` +
        `${result.idle3sRssMb.toFixed(0)} MB after 3 s idle, ${result.idle40sRssMb.toFixed(0)} MB after 40 s idle, peak ${result.peakRssMb.toFixed(0)} MB`,
    );
  }
  const overhead = middle(telegramUserRecords.map((r) => r.overheadP50Ms));
  const idle = middle(telegramUserRecords.map((r) => r.idle40sRssMb));
  console.log(
    `Telegram user account: burst → reply = quiet window + ${overhead.toFixed(0)} ms at p50 (goal + 50 ms: ${overhead <= 50 ? 'met' : 'NOT met'}); idle after 40 s ${idle.toFixed(0)} MB (goal ≤ 90 MB, issue #26: ${idle <= 90 ? 'met' : 'NOT met'} on ${process.version})`,
  );
}

const actionsRecords: (ReplyActionsResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'actions') {
  const turns = options.turns ?? (options.quick ? 20_000 : 100_000);
  const pacedTurns = options.quick ? 200 : 2_000;
  console.log(
    `\nReplies as actions: check + dispatch of a typical five-action plan (${turns.toLocaleString('en')} turns one after another; ${pacedTurns} paced turns at once, CPU time):`,
  );
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureReplyActions(turns, options.warmup ?? (options.quick ? 2_000 : 20_000), pacedTurns);
    actionsRecords.push({ ...result, run });
    console.log(
      `  run ${run}: check ${result.checkUs.toFixed(1)} µs, check + dispatch ${result.checkAndDispatchUs.toFixed(1)} µs per turn; with its pauses ${result.pacedCpuUs.toFixed(1)} µs CPU per turn`,
    );
  }
  const perTurnMs = middle(actionsRecords.map((r) => r.checkAndDispatchUs)) / 1_000;
  const pacedMs = middle(actionsRecords.map((r) => r.pacedCpuUs)) / 1_000;
  console.log(
    `Replies as actions: check + dispatch ${perTurnMs.toFixed(4)} ms per turn at the median, ${pacedMs.toFixed(4)} ms CPU with the pauses' timers (goal < 0.2 ms: ${Math.max(perTurnMs, pacedMs) < 0.2 ? 'met' : 'NOT met'})`,
  );
}

const scaleRecords: (ScaleResult & { run: number })[] = [];
if (options.only === undefined || options.only === 'scale') {
  console.log('\nSeveral processes on one PostgreSQL database (web chat, requests round-robin, model latency 20 ms; SIGKILL mid-turn):');
  for (let run = 1; run <= options.runs; run += 1) {
    const result = await measureScale({ quick: options.quick });
    scaleRecords.push({ ...result, run });
    console.log(`  run ${run}:`);
    for (const line of describeScale(result)) console.log(`  ${line}`);
  }
  if (scaleRecords.length > 1) {
    const rate = (processes: number) => middle(scaleRecords.map((r) => r.throughput.find((t) => t.processes === processes)?.turnsPerSecond ?? 0));
    const takeover = (pick: (r: ScaleResult) => number) => middle(scaleRecords.map(pick));
    console.log(
      `Scale-out (median of ${scaleRecords.length} runs): ${rate(1).toFixed(1)} turns/s with one process, ${rate(2).toFixed(1)} with two (${(rate(2) / rate(1)).toFixed(2)}×, goal ≥ 1.6× with the cores for it); ` +
        `takeover after SIGKILL p50 ${takeover((r) => r.takeover.stored.p50Ms).toFixed(0)} ms, p99 ${takeover((r) => r.takeover.stored.p99Ms).toFixed(0)} ms (goal ≤ 3000 ms)`,
    );
  }
}

const webLatencyRecords: (WebLatencyResult & { run: number })[] = [];
const telegramLatencyRecords: (TelegramLatencyResult & { run: number })[] = [];
const webFloorRecords: (WebLatencyResult & { run: number })[] = [];
if (options.only === 'latency' || options.only === undefined) {
  // Many people: each conversation its own person, several messages each (the first not measured); at 64
  // conversations a person thinks 0–1 s between a reply and their next message.
  const webRuns = options.concurrency.map((concurrency) => ({
    concurrency,
    people: concurrency === 1 ? (options.quick ? 10 : 40) : options.quick ? concurrency : concurrency * 2,
    messagesPerPerson: options.quick ? 3 : 6,
    thinkMeanMs: concurrency === 1 ? 0 : 500,
    modelTtfbMs: 20,
  }));
  console.log('\nLatency a person feels (`palaver start`, SQLite; model: 20 ms to first byte, then a word every 15 ms):');
  for (let run = 1; run <= options.runs; run += 1) {
    for (const params of webRuns) {
      const result = await measureWebLatency({ ...params, profileDir });
      webLatencyRecords.push({ ...result, run });
      console.log(`  run ${run}: ${describeWebLatency(result)}`);
    }
    // The floor: a bare relay in Palaver's place, what the clients, loopback and model server cost on this machine.
    for (const params of webRuns) {
      const result = await measureWebLatency({ ...params, floor: true });
      webFloorRecords.push({ ...result, run });
      console.log(`  run ${run}: ${describeWebLatency(result, true)}`);
    }
    const telegram = await measureTelegramLatency({ bursts: options.quick ? 5 : 20, quietWindowMs: 500, modelTtfbMs: 20, profileDir });
    telegramLatencyRecords.push({ ...telegram, run });
    console.log(`  run ${run}: ${describeTelegramLatency(telegram)}`);
  }
  for (const { concurrency } of webRuns) {
    const records = webLatencyRecords.filter((r) => r.concurrency === concurrency);
    const p50 = middle(records.map((r) => r.own.p50Ms));
    const p99 = middle(records.map((r) => r.own.p99Ms));
    const floor = webFloorRecords.filter((r) => r.concurrency === concurrency);
    console.log(
      `Web c=${concurrency}: Palaver's own time to the first token p50 ${ms(p50)} ms (goal ≤ 1 ms: ${p50 <= 1 ? 'met' : 'NOT met'}), p99 ${ms(p99)} ms${concurrency === 64 ? ` (goal ≤ 5 ms: ${p99 <= 5 ? 'met' : 'NOT met'})` : ''}, median of ${records.length} run(s); ` +
        `the floor (a bare relay) p50 ${ms(middle(floor.map((r) => r.own.p50Ms)))} ms, p99 ${ms(middle(floor.map((r) => r.own.p99Ms)))} ms`,
    );
  }
  const telegramOwn = middle(telegramLatencyRecords.map((r) => r.own.p50Ms));
  console.log(
    `Telegram: burst → first draft = quiet window + model's first byte + ${ms(telegramOwn)} ms at p50 (goal ≤ 30 ms: ${telegramOwn <= 30 ? 'met' : 'NOT met'}), p99 + ${ms(middle(telegramLatencyRecords.map((r) => r.own.p99Ms)))} ms`,
  );
}

if (startRecords.length > 0) {
  const startup = middle(startRecords.map((r) => r.startupMs));
  const idle = middle(startRecords.map((r) => r.idleRssMb));
  const settled = middle(startRecords.map((r) => r.settledRssMb));
  console.log(`\nStart-up (median of ${startRecords.length} run(s)):\n`);
  console.log(
    table(
      ['command', 'spawn → /health 200 ms', 'CPU ms to then', 'RSS after start MB', 'RSS 3 s after 100 conversations MB', 'RSS 40 s after MB', 'peak RSS MB'],
      [
        [
          'palaver start --demo',
          startup.toFixed(0),
          middle(startRecords.map((r) => r.startupCpuMs)).toFixed(0),
          middle(startRecords.map((r) => r.rssAfterStartMb)).toFixed(0),
          idle.toFixed(0),
          settled.toFixed(0),
          middle(startRecords.map((r) => r.peakRssMb)).toFixed(0),
        ],
      ],
    ),
  );
  console.log(
    `\nStart-up ${startup.toFixed(0)} ms (goal < 250 ms on Node 24, issue #26: ${startup < 250 ? 'met' : 'NOT met'} on ${process.version}); idle ${settled.toFixed(0)} MB 40 s after the conversations, ${idle.toFixed(0)} MB 3 s after (goal < 110 MB idle: ${settled < 110 ? 'met' : 'NOT met'})`,
  );
}

console.log(
  `\nLoad average at end: ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ')}`,
);
if (profileDir) console.log(`CPU profiles: ${profileDir} (summarise with: node --import tsx bench/profile-summary.ts ${profileDir}/<file>.cpuprofile)`);

if (options.json) {
  const path = resolve(options.json);
  writeFileSync(
    path,
    `${JSON.stringify({ machine, options, turns: [...turnRecords].flatMap(([variant, records]) => records.map((record) => ({ variant, ...record }))), mcp: mcpRecords, start: startRecords, inbox: inboxRecords, history: historyResults, telegram: telegramRecords, telegramUser: telegramUserRecords, actions: actionsRecords, scale: scaleRecords, latency: { web: webLatencyRecords, floor: webFloorRecords, telegram: telegramLatencyRecords }, dispatch: dispatchRecords, dispatchTurns: turnRatioRecords }, null, 2)}\n`,
  );
  console.log(`Raw numbers: ${path}`);
}
