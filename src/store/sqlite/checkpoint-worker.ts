// The checkpointer's thread (see wal-checkpointer.ts): its own connection to the database file, a PASSIVE
// checkpoint every `intervalMs`, and a RESTART of the WAL in the quiet moment the main thread grants on request.
// Runs as a worker only; importing it elsewhere does nothing.

import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { loadNodeSqlite } from '../../platform/load-node-sqlite.js';

/** What the main thread hands the worker. */
export interface CheckpointWorkerData {
  readonly path: string;
  /** The binding the main connection uses; the worker opens its connection with the same one. */
  readonly binding: 'node' | 'better-sqlite3';
  readonly intervalMs: number;
  /** WAL frames after which the worker asks for a quiet moment to start the WAL over. */
  readonly restartFrames: number;
  /** The worker ends after this long without new WAL frames (an idle database needs no thread); 0: never. */
  readonly idleStopMs: number;
}

/** Messages from the worker to the main thread. */
export type CheckpointWorkerEvent =
  | { readonly type: 'ready' }
  | { readonly type: 'quiet-please' }
  | { readonly type: 'restarted' }
  | { readonly type: 'idle' }
  | { readonly type: 'failed'; readonly message: string };

/** Messages from the main thread: `quiet` grants the quiet moment, `stop` closes the connection and ends. */
export type CheckpointWorkerCommand = 'quiet' | 'stop';

/** The slice of either binding the worker uses. */
interface WorkerDatabase {
  exec(sql: string): void;
  prepare(sql: string): { get(): unknown };
  close(): void;
}

function openDatabase({ path, binding }: CheckpointWorkerData): WorkerDatabase {
  if (binding === 'node') {
    const sqlite = loadNodeSqlite() as { DatabaseSync: new (path: string) => WorkerDatabase };
    return new sqlite.DatabaseSync(path);
  }
  const BetterSqlite3 = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => WorkerDatabase;
  return new BetterSqlite3(path);
}

function run(port: NonNullable<typeof parentPort>, data: CheckpointWorkerData): void {
  const post = (event: CheckpointWorkerEvent): void => port.postMessage(event);
  let db: WorkerDatabase | undefined;
  let timer: NodeJS.Timeout | undefined;
  const fail = (error: unknown): void => {
    post({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    clearInterval(timer);
    try {
      db?.close();
    } catch {
      // Closing is best effort on the way out.
    }
    process.exit(1);
  };
  try {
    db = openDatabase(data);
    // The reset waits at most this long for another process's writer; then it is tried again on the next round.
    db.exec('PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 200');
  } catch (error) {
    fail(error);
    return;
  }
  const database = db;
  const checkpoint = (mode: 'PASSIVE' | 'RESTART'): { log: number } => database.prepare(`PRAGMA wal_checkpoint(${mode})`).get() as { log: number };
  let waitingForQuiet = false;
  const idleRounds = data.idleStopMs > 0 ? Math.max(1, Math.ceil(data.idleStopMs / data.intervalMs)) : Infinity;
  let lastLog = -1;
  let quietRounds = 0;
  timer = setInterval(() => {
    if (waitingForQuiet) return;
    try {
      // Copies what it can without waiting for anyone.
      const { log } = checkpoint('PASSIVE');
      quietRounds = log === lastLog ? quietRounds + 1 : 0;
      lastLog = log;
      if (quietRounds >= idleRounds) {
        // Nothing written for a while: end the thread; the next commit starts another.
        clearInterval(timer);
        database.close();
        post({ type: 'idle' });
        port.close();
        return;
      }
      if (log >= data.restartFrames) {
        waitingForQuiet = true;
        post({ type: 'quiet-please' });
      }
    } catch (error) {
      fail(error);
    }
  }, data.intervalMs);
  port.on('message', (command: CheckpointWorkerCommand) => {
    if (command === 'quiet') {
      // The process writes nothing now: checkpoint the rest and start the WAL over.
      try {
        checkpoint('RESTART');
      } catch (error) {
        fail(error);
      }
      waitingForQuiet = false;
      post({ type: 'restarted' });
    } else if (command === 'stop') {
      clearInterval(timer);
      database.close();
      port.close();
    }
  });
  post({ type: 'ready' });
}

if (parentPort !== null) run(parentPort, workerData as CheckpointWorkerData);
