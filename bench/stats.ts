/** Small helpers shared by the benchmark scenarios: latency summaries and the message a scenario sends back. */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';

export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly meanMs: number;
  readonly maxMs: number;
}

/** Nearest-rank percentiles over latencies in milliseconds. */
export function summarize(latenciesMs: readonly number[]): LatencySummary {
  if (latenciesMs.length === 0) return { count: 0, p50Ms: 0, p99Ms: 0, meanMs: 0, maxMs: 0 };
  const sorted = Float64Array.from(latenciesMs).sort();
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  let sum = 0;
  for (const value of sorted) sum += value;
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), meanMs: sum / sorted.length, maxMs: sorted[sorted.length - 1]! };
}

/**
 * Runs `total` operations with `concurrency` workers. Worker `w` runs its share sequentially (worker-local state,
 * e.g. one user per worker, stays consistent); every operation's latency is recorded.
 */
export async function runWorkers(concurrency: number, total: number, op: (worker: number, index: number) => Promise<void>): Promise<RunMeasurement> {
  const latenciesMs: number[] = [];
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadCpuMs();
  const base = Math.floor(total / concurrency);
  const extra = total % concurrency;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      const share = base + (worker < extra ? 1 : 0);
      for (let index = 0; index < share; index += 1) {
        const t0 = performance.now();
        await op(worker, index);
        latenciesMs.push(performance.now() - t0);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const mainAfter = mainThreadCpuMs();
  return {
    elapsedMs,
    latenciesMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    mainThreadCpuMs: mainBefore === undefined || mainAfter === undefined ? undefined : mainAfter - mainBefore,
  };
}

/**
 * CPU time of the calling (main) thread in ms, from Linux's `/proc/thread-self/schedstat` (nanoseconds on CPU);
 * undefined elsewhere. JavaScript runs on this one thread, so it bounds a Node process's throughput, while the
 * process total also counts GC and compiler helper threads.
 */
export function mainThreadCpuMs(): number | undefined {
  try {
    const onCpuNs = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0];
    return onCpuNs === undefined ? undefined : Number(onCpuNs) / 1e6;
  } catch {
    return undefined;
  }
}

export interface RunMeasurement {
  readonly elapsedMs: number;
  readonly latenciesMs: number[];
  /** CPU time (user + system) this process spent during the run: unlike wall time, not inflated by a busy machine. */
  readonly cpuMs: number;
  /** CPU time of the main (JavaScript) thread alone, where the platform tells it. */
  readonly mainThreadCpuMs: number | undefined;
}

/** What a scenario child process reports to `bench/run.ts` over IPC. */
export interface ScenarioResult {
  readonly scenario: string;
  readonly concurrency: number;
  readonly operations: number;
  readonly elapsedMs: number;
  readonly perSecond: number;
  readonly latency: LatencySummary;
  /** CPU time of the scenario process per operation, in ms (the client side only; the servers run elsewhere). */
  readonly cpuMsPerOp: number;
  /** CPU time of the main (JavaScript) thread per operation, in ms, where the platform tells it. */
  readonly mainThreadCpuMsPerOp: number | undefined;
  /** `process.resourceUsage().maxRSS` of the child, in MB: its peak resident set over the whole run. */
  readonly peakRssMb: number;
  readonly extra?: Readonly<Record<string, unknown>>;
}

export function scenarioResult(scenario: string, concurrency: number, run: RunMeasurement, extra?: Record<string, unknown>): ScenarioResult {
  return {
    scenario,
    concurrency,
    operations: run.latenciesMs.length,
    elapsedMs: run.elapsedMs,
    perSecond: (run.latenciesMs.length * 1000) / run.elapsedMs,
    latency: summarize(run.latenciesMs),
    cpuMsPerOp: run.cpuMs / Math.max(1, run.latenciesMs.length),
    mainThreadCpuMsPerOp: run.mainThreadCpuMs === undefined ? undefined : run.mainThreadCpuMs / Math.max(1, run.latenciesMs.length),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    ...(extra ? { extra } : {}),
  };
}

/** Sends the result to the parent (IPC) and exits; prints it when run by hand. */
export function report(result: ScenarioResult): void {
  if (process.send) {
    process.send(result, () => process.exit(0));
  } else {
    console.log(JSON.stringify(result, null, 2));
    process.exit(0);
  }
}

/** The scenario's parameters: JSON in argv[2]. */
export function scenarioArgs<T>(): T {
  const raw = process.argv[2];
  if (!raw) throw new Error('Pass the scenario parameters as JSON in the first argument (bench/run.ts does).');
  return JSON.parse(raw) as T;
}

/**
 * Runs `fn` under the V8 CPU profiler when `profileDir` is set (the measured phase only: no start-up, no warm-up)
 * and writes `<label>.cpuprofile` there; summarise it with bench/profile-summary.ts.
 */
export async function profiled<T>(profileDir: string | undefined, label: string, fn: () => Promise<T>): Promise<T> {
  if (!profileDir) return fn();
  const profile = await startProfile();
  try {
    return await fn();
  } finally {
    await profile.stop(join(profileDir, `${label}.cpuprofile`));
  }
}

/** Messages between bench/run.ts and a turn scenario that runs its measured phase in chunks. */
export type ChunkCommand = { readonly type: 'chunk'; readonly turns: number } | { readonly type: 'done' };
export type ChunkReply =
  | { readonly type: 'ready' }
  | { readonly type: 'chunk'; readonly measurement: RunMeasurement }
  | { readonly type: 'done'; readonly peakRssMb: number; readonly extra: Record<string, unknown> };

/**
 * The measured phase of a turn scenario, in chunks run when the parent says so: the parent alternates the chunks of
 * the two sides (bare loop, Palaver), both processes alive and warm, so a machine whose speed drifts over seconds
 * moves both alike. Run by hand (no IPC), it runs `turns` in one chunk and prints the result.
 */
export async function serveChunks(options: {
  readonly scenario: string;
  readonly concurrency: number;
  readonly turns: number;
  readonly profileDir: string | undefined;
  readonly op: (worker: number) => Promise<void>;
  /** Called once after the last chunk (close what the scenario opened); its result goes into `extra`. */
  readonly finish: () => Promise<Record<string, unknown>>;
}): Promise<void> {
  const label = `${options.scenario}-c${options.concurrency}-${process.pid}`;
  const send = process.send?.bind(process);
  if (!send) {
    const run = await profiled(options.profileDir, label, () => runWorkers(options.concurrency, options.turns, options.op));
    console.log(JSON.stringify(scenarioResult(options.scenario, options.concurrency, run, await options.finish()), null, 2));
    return;
  }
  const profile = options.profileDir ? await startProfile() : undefined;
  const commands: ChunkCommand[] = [];
  let wake: (() => void) | undefined;
  process.on('message', (command: ChunkCommand) => {
    commands.push(command);
    wake?.();
  });
  const next = async (): Promise<ChunkCommand> => {
    while (commands.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return commands.shift()!;
  };
  const reply = (message: ChunkReply): Promise<void> => new Promise((resolve) => send(message, undefined, {}, () => resolve()));
  await reply({ type: 'ready' });
  for (let command = await next(); command.type === 'chunk'; command = await next()) {
    await reply({ type: 'chunk', measurement: await runWorkers(options.concurrency, command.turns, options.op) });
  }
  if (profile) await profile.stop(join(options.profileDir!, `${label}.cpuprofile`));
  const extra = await options.finish();
  await reply({ type: 'done', peakRssMb: process.resourceUsage().maxRSS / 1024, extra });
  process.disconnect();
}

/** Merges the chunks of one side into one measurement, as if run at a stretch. */
export function mergeMeasurements(parts: readonly RunMeasurement[]): RunMeasurement {
  const mainThread = parts.map((part) => part.mainThreadCpuMs);
  return {
    elapsedMs: parts.reduce((sum, part) => sum + part.elapsedMs, 0),
    latenciesMs: parts.flatMap((part) => part.latenciesMs),
    cpuMs: parts.reduce((sum, part) => sum + part.cpuMs, 0),
    mainThreadCpuMs: mainThread.some((value) => value === undefined) ? undefined : mainThread.reduce((sum, value) => sum! + value!, 0),
  };
}

async function startProfile(): Promise<{ stop(path: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop(path) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(path, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
