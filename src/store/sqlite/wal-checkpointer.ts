import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerCommand, CheckpointWorkerData, CheckpointWorkerEvent } from './checkpoint-worker.js';
import { PACKAGE_ROOT } from '../../platform/package-root.js';

/** How often the checkpointer copies the WAL back into the database file, in ms. */
export const CHECKPOINT_INTERVAL_MS = 100;

/**
 * WAL frames (pages, 4 KiB by default) after which the WAL starts over. The WAL starts over only when a checkpoint
 * has caught up with the writer, which a passive checkpoint under unbroken load seldom does; so at this size the
 * checkpointer asks for a quiet moment: the process's writes wait (asynchronously, through the connection gate)
 * while it checkpoints the last frames and resets the log, a few ms.
 */
export const RESTART_FRAMES = 4096;

/** Which binding the worker opens its own connection with: the one the main connection uses. */
export type CheckpointBinding = 'node' | 'better-sqlite3';

export interface WalCheckpointerOptions {
  readonly path: string;
  readonly binding: CheckpointBinding;
  /** Turns the main connection's own checkpoints off (0) while the worker runs, back on when it stops. */
  readonly setAutoCheckpoint: (pages: number) => void;
  /** Runs `fn` while this process writes nothing to the database. */
  readonly whileWritesPaused: (fn: () => Promise<void>) => Promise<void>;
  readonly intervalMs?: number;
  readonly restartFrames?: number;
  /** The thread ends after this long without writes and starts again when writes are frequent again; 0 keeps it. */
  readonly idleStopMs?: number;
  /**
   * How frequent writes must be for the thread to start: `writes` statements that changed the database within
   * `withinMs` (default {@link START_WRITES} within {@link START_WINDOW_MS}). `writes: 0` starts it at once.
   */
  readonly startAfter?: { readonly writes: number; readonly withinMs: number };
  /** The clock the write rate is measured with, in ms (tests pass their own). */
  readonly now?: () => number;
}

/**
 * Writes within {@link START_WINDOW_MS} that start the thread: 600 a second, held for 10 s. A turn writes some 12 WAL
 * pages with about 6 statements, so SQLite's own checkpoint, inside the commit that crosses 1000 pages, comes every
 * ~500 writes and costs that commit about 4 ms: below this rate under 0.5 % of the time, against a thread that holds
 * 10–20 MB (more on Node 24) while it runs, leaves a few MB of its allocations behind when it ends (2 MB on Node 20,
 * 4 MB on Node 24, measured after a burst of 100 Telegram chats, ~4000 writes in 7 s, which a 5 s window counted as
 * sustained), and takes CPU to start. Busier for longer (the turn benchmark writes ~4000 a second at c=1), those
 * checkpoints cost about 5 % of the throughput, and the thread pays for itself.
 */
export const START_WRITES = 6_000;
export const START_WINDOW_MS = 10_000;

/** How long the worker runs on without new WAL frames before it ends (an idle server then holds no thread). */
export const IDLE_STOP_MS = 10_000;

/** SQLite's default `wal_autocheckpoint`, restored on the main connection when the worker is gone. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

/**
 * How to start the worker's module. Built, it is dist/store/sqlite/checkpoint-worker.js, an entry point of its own
 * (this code itself may sit in a shared chunk, so the path comes from the package root). Run from source (vitest, tsx)
 * only the `.ts` exists: the thread then registers tsx before importing it (on Node 20 a worker's `--import tsx`
 * registers its hooks too late for the worker's own entry, hence this one-line bootstrap).
 */
function workerEntry(): { readonly entry: URL | string; readonly eval: boolean } {
  if (!import.meta.url.endsWith('.ts')) return { entry: pathToFileURL(join(PACKAGE_ROOT, 'dist', 'store', 'sqlite', 'checkpoint-worker.js')), eval: false };
  const tsxPackage = createRequire(import.meta.url).resolve('tsx/package.json');
  const tsxApi = pathToFileURL(join(dirname(tsxPackage), 'dist/esm/api/index.mjs')).href;
  const worker = new URL('./checkpoint-worker.ts', import.meta.url).href;
  return { entry: `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(worker)}); });`, eval: true };
}

/**
 * Checkpoints a SQLite database's write-ahead log from a worker thread, with a connection of its own.
 *
 * Left to itself, SQLite checkpoints inside the commit that crosses 1000 WAL pages: that commit copies the pages into
 * the database file and waits for two fsyncs, on the thread that runs every turn. Once writes are frequent
 * ({@link START_WRITES} within {@link START_WINDOW_MS}) the main connection stops checkpointing and the worker does,
 * every {@link CHECKPOINT_INTERVAL_MS}, beside the writer (a passive checkpoint waits for nobody), and resets the WAL
 * at {@link RESTART_FRAMES}. It ends after {@link IDLE_STOP_MS} without writes. If the worker cannot start or fails,
 * the main connection's own checkpoints are turned back on.
 */
export class WalCheckpointer {
  readonly #options: WalCheckpointerOptions;
  readonly #workerData: CheckpointWorkerData;
  #worker: Worker | undefined;
  #active = false;
  /** The worker could not run here (a failure, not an idle end): checkpoints stay with the main connection. */
  #failed = false;
  #stopping: Promise<void> | undefined;
  readonly #startAfter: { readonly writes: number; readonly withinMs: number };
  readonly #now: () => number;
  /** Writes counted in the current window, while no thread runs. */
  #writes = 0;
  #windowStart = Number.NEGATIVE_INFINITY;

  constructor(options: WalCheckpointerOptions) {
    this.#options = options;
    this.#workerData = {
      path: options.path,
      binding: options.binding,
      intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
      restartFrames: options.restartFrames ?? RESTART_FRAMES,
      idleStopMs: options.idleStopMs ?? IDLE_STOP_MS,
    };
    this.#startAfter = options.startAfter ?? { writes: START_WRITES, withinMs: START_WINDOW_MS };
    this.#now = options.now ?? (() => performance.now());
    if (this.#startAfter.writes <= 0) this.#start();
  }

  /**
   * Called after each statement of the main connection that writes: counts it, and starts the worker once writes are
   * frequent (again, after it ended while the database was idle). A field check while the worker runs.
   */
  wake(): void {
    if (this.#worker !== undefined || this.#stopping !== undefined || this.#failed) return;
    const now = this.#now();
    if (now - this.#windowStart > this.#startAfter.withinMs) {
      this.#windowStart = now;
      this.#writes = 0;
    }
    this.#writes += 1;
    if (this.#writes >= this.#startAfter.writes) this.#start();
  }

  /** True from the moment the worker thread is started until it has ended. */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  #start(): void {
    this.#writes = 0;
    this.#windowStart = Number.NEGATIVE_INFINITY;
    const { entry, eval: isBootstrap } = workerEntry();
    const worker = new Worker(entry, {
      eval: isBootstrap,
      workerData: this.#workerData,
      // The worker needs none of the parent's flags (loaders, inspector).
      execArgv: [],
      stdout: false,
      stderr: false,
    });
    this.#worker = worker;
    // A forgotten close() must not keep the process alive.
    worker.unref();
    worker.on('message', (message: CheckpointWorkerEvent) => {
      if (message.type === 'ready' && this.#stopping === undefined) {
        this.#active = true;
        this.#options.setAutoCheckpoint(0);
      } else if (message.type === 'quiet-please') {
        void this.#restartWhileQuiet(worker);
      } else if (message.type === 'failed') {
        this.#failed = true;
        process.emitWarning(`Palaver's SQLite checkpointer stopped (${message.message}); the database checkpoints on commit instead.`);
      }
    });
    worker.on('error', (error) => {
      this.#failed = true;
      process.emitWarning(`Palaver's SQLite checkpointer failed (${error.message}); the database checkpoints on commit instead.`);
    });
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#handBack();
    });
  }

  /** True while the worker does the checkpoints. */
  get active(): boolean {
    return this.#active;
  }

  /** Closes the worker's connection and ends the thread; the main connection checkpoints again. */
  stop(): Promise<void> {
    const worker = this.#worker;
    this.#stopping ??=
      worker === undefined
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            // Keeps the process alive until the worker has closed its connection.
            worker.ref();
            worker.once('exit', () => resolve());
            worker.postMessage('stop' satisfies CheckpointWorkerCommand);
          });
    return this.#stopping;
  }

  async #restartWhileQuiet(worker: Worker): Promise<void> {
    await this.#options.whileWritesPaused(async () => {
      if (this.#worker !== worker) return;
      const done = new Promise<void>((resolve) => {
        const onMessage = (message: CheckpointWorkerEvent) => {
          if (message.type !== 'restarted') return;
          worker.off('message', onMessage);
          worker.off('exit', onExit);
          resolve();
        };
        const onExit = () => {
          worker.off('message', onMessage);
          resolve();
        };
        worker.on('message', onMessage);
        worker.once('exit', onExit);
      });
      worker.postMessage('quiet' satisfies CheckpointWorkerCommand);
      await done;
    });
  }

  #handBack(): void {
    if (!this.#active) return;
    this.#active = false;
    try {
      this.#options.setAutoCheckpoint(DEFAULT_AUTOCHECKPOINT_PAGES);
    } catch {
      // The main connection is already closed: nothing left to checkpoint from it.
    }
  }
}
