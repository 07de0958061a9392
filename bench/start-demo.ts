/**
 * Start-up and idle memory of the product command: `node bin/palaver.js start --demo --port 0` in an empty temp
 * working folder (its SQLite file and cookie secret land there), exactly as a person runs it — no extra Node flags.
 *
 * - **start-up**: spawn → the first 200 from `GET /health` (polled as soon as the process prints its URL).
 * - **idle RSS after 100 web conversations**: 100 AG-UI runs over real HTTP (`POST /agui` with a RunAgentInput,
 *   each its own thread, the SSE stream read to RUN_FINISHED), 4 at a time; then the process is left alone for
 *   `idleMs` and its resident set is read from /proc/<pid>/status (VmRSS; VmHWM is its peak).
 *
 * Used by bench/run.ts (`--only start`); by hand: node --import tsx bench/start-demo.ts [runs=3] [checkout, built; '.' for this one] [node flags…]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface StartDemoResult {
  /** Spawn → first 200 from /health, in ms. */
  readonly startupMs: number;
  /**
   * CPU time (user + system, all threads) the process used up to that 200, in ms: on a busy machine wall time
   * mostly measures the other processes, CPU time much less so.
   */
  readonly startupCpuMs: number;
  /** Spawn → the process printed that it listens, in ms. */
  readonly listeningMs: number;
  /** RSS right after start-up (once /health answered), in MB. */
  readonly rssAfterStartMb: number;
  /** RSS after the conversations and `idleMs` of idleness, in MB. */
  readonly idleRssMb: number;
  /**
   * RSS after `settledMs` of idleness (default 40 s), in MB: a server that stays quiet gives the heap it grew under
   * load back, which takes V8 (and Palaver's idle hint) several seconds.
   */
  readonly settledRssMb: number;
  /** Peak RSS of the process (VmHWM), in MB. */
  readonly peakRssMb: number;
  readonly conversations: number;
  /** Wall time of the conversations, in ms. */
  readonly conversationsMs: number;
  readonly failed: number;
}

export interface StartDemoOptions {
  readonly conversations?: number;
  readonly concurrency?: number;
  readonly idleMs?: number;
  /** Idle time before the settled RSS is read (default 40 s). */
  readonly settledMs?: number;
  /** The Palaver checkout whose bin/palaver.js is run (default: this one); to compare with another commit's build. */
  readonly root?: string;
  /** Flags given to node before bin/palaver.js (e.g. `--optimize-for-size`), as an operator would start it. */
  readonly nodeFlags?: readonly string[];
}

/** CPU time of a process so far, in ms (utime + stime of /proc/<pid>/stat, in clock ticks of 10 ms). */
export function procCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function procStatusMb(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : Number.NaN;
}

/** One AG-UI run: POST /agui, read the SSE stream to RUN_FINISHED (or RUN_ERROR). */
async function converse(baseUrl: string, index: number): Promise<boolean> {
  const body = {
    threadId: `bench-thread-${index}`,
    runId: `bench-run-${index}-${Date.now()}`,
    messages: [{ id: `bench-message-${index}`, role: 'user', content: index % 2 === 0 ? 'what time is it?' : 'remember: buy milk' }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  };
  const response = await fetch(`${baseUrl}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
  });
  if (!response.ok || !response.body) return false;
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of response.body) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    if (text.includes('"RUN_FINISHED"')) return true;
    if (text.includes('"RUN_ERROR"')) return false;
  }
  return text.includes('"RUN_FINISHED"');
}

/** Runs the command once and measures it. */
export async function measureStartDemo(options: StartDemoOptions = {}): Promise<StartDemoResult> {
  const conversations = options.conversations ?? 100;
  const concurrency = options.concurrency ?? 4;
  const idleMs = options.idleMs ?? 3000;
  const settledMs = Math.max(options.settledMs ?? 40_000, idleMs);
  const cwd = mkdtempSync(join(tmpdir(), 'palaver-bench-start-'));
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('PALAVER_') || name === 'NODE_OPTIONS') delete env[name];
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), join(options.root ?? repoRoot, 'bin', 'palaver.js'), 'start', '--demo', '--port', '0'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  try {
    const { baseUrl, listeningMs } = await new Promise<{ baseUrl: string; listeningMs: number }>((resolvePromise, reject) => {
      let stdout = '';
      child.stdout.on('data', (data: Buffer) => {
        stdout += data.toString();
        const match = /listening on (http:\/\/\S+)/.exec(stdout);
        if (match) resolvePromise({ baseUrl: match[1]!, listeningMs: performance.now() - started });
      });
      child.once('exit', (code) => reject(new Error(`palaver start exited (${code}) before listening: ${stderr.slice(0, 2000)}`)));
    });
    let startupMs = Number.NaN;
    let startupCpuMs = Number.NaN;
    for (;;) {
      const response = await fetch(`${baseUrl}/health`).catch(() => undefined);
      if (response?.status === 200) {
        startupMs = performance.now() - started;
        startupCpuMs = procCpuMs(child.pid!);
        break;
      }
      await response?.body?.cancel();
      if (performance.now() - started > 30_000) throw new Error('no 200 from /health within 30 s');
    }
    const rssAfterStartMb = procStatusMb(child.pid!, 'VmRSS');
    const conversationsStarted = performance.now();
    let failed = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < conversations) {
          const index = next++;
          if (!(await converse(baseUrl, index).catch(() => false))) failed += 1;
        }
      }),
    );
    const conversationsMs = performance.now() - conversationsStarted;
    await new Promise((resolveTimer) => setTimeout(resolveTimer, idleMs));
    const idleRssMb = procStatusMb(child.pid!, 'VmRSS');
    await new Promise((resolveTimer) => setTimeout(resolveTimer, settledMs - idleMs));
    const settledRssMb = procStatusMb(child.pid!, 'VmRSS');
    return {
      startupMs,
      startupCpuMs,
      listeningMs,
      rssAfterStartMb,
      idleRssMb,
      settledRssMb,
      peakRssMb: procStatusMb(child.pid!, 'VmHWM'),
      conversations,
      conversationsMs,
      failed,
    };
  } finally {
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const runs = Number(process.argv[2] ?? 3);
  // [runs] [checkout, or '.' for this one] [node flags …]
  const root = process.argv[3] && process.argv[3] !== '.' ? { root: resolve(process.argv[3]) } : {};
  const nodeFlags = process.argv.slice(4);
  for (let run = 1; run <= runs; run += 1) console.log(JSON.stringify(await measureStartDemo({ ...root, nodeFlags })));
}
