import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { recordRunLog } from '../support/run-log.js';
import { bundledChild } from './bundled-child.js';

/** The repository root; spawned scripts are resolved against it. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** tsx's loader as an absolute URL, so a child running in a temp folder (no node_modules) still finds it. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** The tests' own folder: child scripts under it are bundled rather than loaded through tsx. */
const TEST_ROOT = fileURLToPath(new URL('../', import.meta.url));
/**
 * The `palaver` command as people run it: bin/palaver.js over the built dist/ (`npm test` builds first, and the
 * global setup `test/support/fresh-build.ts` rebuilds a dist/ older than src/). Started without tsx, a process costs
 * a third of the CPU time it did from src/ through tsx.
 */
export const PALAVER_BIN = fileURLToPath(new URL('../../bin/palaver.js', import.meta.url));
/** The same bin on the fake Telegram: its first argument is the fake MTProto server's URL. */
export const PALAVER_ON_FAKE_TELEGRAM_BIN = fileURLToPath(new URL('./palaver-on-fake-telegram.ts', import.meta.url));

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A spawned Node process whose output is collected as it arrives. */
export interface RunningChild {
  readonly process: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout; rejects with the output so far on timeout or exit. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  readonly exited: Promise<Exit>;
  /** Resolves with the exit, or rejects (with the output so far) when the process is still running after `timeoutMs`. */
  waitForExit(timeoutMs?: number): Promise<Exit>;
  /** Sends `signal`, then {@link waitForExit}. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
}

const running = new Set<RunningChild>();

/** The environment without PALAVER_* variables, so a developer's shell cannot change what a test sees. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PALAVER_')) env[key] = value;
  return { ...env, NO_COLOR: '1', ...extra };
}

/**
 * Runs `node <script> ...args`. A TypeScript script of the tests' own runs as its bundle (test/cli/bundled-child.ts);
 * any other TypeScript (the examples, as a team runs them) through tsx. Call {@link killAll} in `afterEach`.
 */
export function spawnNode(script: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): RunningChild {
  const typescript = script.endsWith('.ts');
  const ours = typescript && script.startsWith(TEST_ROOT);
  const command = ours ? [bundledChild(script)] : typescript ? ['--import', TSX_LOADER, script] : [script];
  const child = spawn(process.execPath, [...command, ...args], { cwd: options.cwd, env: options.env ?? cleanEnv(), stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // Everything a child printed (its logs included) joins the run-wide log that is searched for secrets.
  child.once('close', () => recordRunLog(stdout + stderr));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let done = false;
  void exited.then(() => (done = true));

  const handle: RunningChild = {
    process: child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForOutput(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const match = pattern.exec(stdout);
          if (!match) return false;
          cleanup();
          resolve(match);
          return true;
        };
        const fail = (why: string) => {
          cleanup();
          reject(new Error(`${why} waiting for ${pattern}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
        };
        const onData = () => void check();
        const onExit = () => {
          if (!check()) fail('process exited');
        };
        const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          child.stdout.off('data', onData);
          child.off('exit', onExit);
        };
        child.stdout.on('data', onData);
        child.once('exit', onExit);
        if (done) onExit();
        else check();
      });
    },
    async waitForExit(timeoutMs = 15_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`process still running after ${timeoutMs} ms\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`)),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([exited, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    stop(signal = 'SIGTERM', timeoutMs = 5_000) {
      if (!done) child.kill(signal);
      return handle.waitForExit(timeoutMs);
    },
  };
  running.add(handle);
  void exited.then(() => running.delete(handle));
  return handle;
}

/** Kills every child still running (SIGKILL) and waits for them to exit. */
export async function killAll(): Promise<void> {
  const children = [...running];
  for (const child of children) child.process.kill('SIGKILL');
  await Promise.all(children.map((child) => child.exited));
}

/** Writes the lines to stdin, one at a time, and ends it. */
export function typeLines(child: RunningChild, lines: readonly string[]): void {
  for (const line of lines) child.process.stdin.write(`${line}\n`);
  child.process.stdin.end();
}
