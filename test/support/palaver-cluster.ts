import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, secretsOf } from '../../src/config/index.js';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedCall, type ScriptedModelServer, type ScriptedReply } from '../../src/testing/index.js';
import { cleanEnv, PALAVER_BIN, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { parseSse } from '../server/sse.js';
import { createTestMariadbDatabase } from './mariadb.js';
import { createTestPostgresDatabase } from './postgres.js';
import { connectTestRedis, dropTestKeys, testRedisSettings, TEST_REDIS_URL } from './redis.js';
import { merge } from './palaver-harness.js';
import { registerRunSecrets } from './run-log.js';
import { TEST_SECRETS } from './secrets.js';

// Several real `palaver start` processes (child processes running the built bin/palaver.js) on one fresh database, each on
// its own HTTP port, all calling one scripted model server in the test process: as several processes behind a load
// balancer. The model records when each call started and ended and which process made it (each process has its own
// model name, `scripted@<label>`), so a test can tell whether two turns of one conversation overlapped.

export type ClusterDatabase = 'sqlite' | 'postgres' | 'mariadb';

/** One model request as the scripted model saw it, with its times (performance.now() of the test process). */
export interface ModelRequest {
  /** The label of the process that made it. */
  readonly via: string;
  readonly call: ScriptedCall;
  readonly startedAt: number;
  /** When the script had decided and the answer went out; undefined while the script still holds it. */
  endedAt: number | undefined;
  /** What the model answered (text), once decided. */
  reply: string | undefined;
}

/** Decides a model answer. `delayMs` is waited inside the recorded interval. The request tells the process (`via`). */
export type ClusterScript = (call: ScriptedCall, request: ModelRequest) => ScriptedReply | Promise<ScriptedReply>;

export interface ClusterOptions {
  readonly database: ClusterDatabase;
  /** Labels of the processes, started one after another (the first migrates the database). Default `['a', 'b']`. */
  readonly processes?: readonly string[];
  readonly script: ClusterScript;
  /** Config merged over the cluster's own (model, database, bus, web cookie secret, lease). */
  readonly config?: Record<string, unknown>;
  /** `inbox.leaseMs`; by default the config's own, i.e. what a user gets out of the box. */
  readonly leaseMs?: number;
  /** Default `warn`: a burst of hundreds of turns at `info` is megabytes of output to collect. */
  readonly logLevel?: 'debug' | 'info' | 'warn';
}

/** One `palaver start` process of the cluster. */
export interface ClusterProcess {
  readonly label: string;
  /** Its HTTP base URL (changes on restart: every start takes a free port). */
  readonly url: string;
  readonly child: RunningChild;
  readonly alive: boolean;
  /** SIGKILL, and waits until it is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: the process stays, frozen, holding its connections. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Starts it again (after a kill) with the same config, and waits until it listens. */
  restart(): Promise<void>;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

export interface PalaverCluster {
  readonly databaseUrl: string;
  readonly model: ScriptedModelServer;
  /** Every model request so far, oldest first. */
  readonly requests: ModelRequest[];
  readonly processes: readonly ClusterProcess[];
  process(label: string): ClusterProcess;
  /** The store of the shared database, opened in the test process (no migrations) on first use. */
  store(): Promise<Store>;
  /** Kills every process, closes the model and the store, drops the database (and the Redis keys). */
  close(): Promise<void>;
}

export async function startCluster(options: ClusterOptions): Promise<PalaverCluster> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanUp = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await Promise.resolve(cleanup()).catch(() => {});
  };
  try {
    const database =
      options.database === 'postgres' ? await createTestPostgresDatabase() : options.database === 'mariadb' ? await createTestMariadbDatabase() : sqliteFile();
    cleanups.push(() => database.drop());
    const redis = options.database === 'mariadb' ? testRedisSettings(TEST_REDIS_URL) : undefined;
    if (redis) {
      // Fails here, naming Redis and how to start it, rather than as a process that would not start.
      await (await connectTestRedis(redis)).close();
      cleanups.push(() => dropTestKeys(redis));
    }

    const requests: ModelRequest[] = [];
    const model = await startScriptedModelServer({
      maxRecordedCalls: 100_000,
      script: async (call) => {
        const request: ModelRequest = { via: call.model.split('@')[1] ?? '?', call, startedAt: performance.now(), endedAt: undefined, reply: undefined };
        requests.push(request);
        const { delayMs, ...reply } = await options.script(call, request);
        if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
        request.endedAt = performance.now();
        request.reply = reply.text ?? '';
        return reply;
      },
    });
    cleanups.push(() => model.close());

    const dir = mkdtempSync(join(tmpdir(), 'palaver-cluster-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');

    const processes = new Map<string, ClusterProcess>();
    for (const label of options.processes ?? ['a', 'b']) {
      const config = merge(
        {
          model: { name: `scripted@${label}`, baseUrl: model.baseUrl, apiKey: TEST_SECRETS.modelApiKey, maxRetries: 0, timeoutMs: 60_000 },
          database: { url: database.url },
          agent: { instructionsDir: join(dir, 'instructions'), historyLimit: 200 },
          // The lease the contract of issue #25 defaults to; set here while main's default is still 15 s.
          ...(options.leaseMs === undefined ? {} : { inbox: { leaseMs: options.leaseMs } }),
          cluster: { bus: redis ? 'redis' : options.database === 'postgres' ? 'postgres' : 'local' },
          ...(redis ? { redis: { url: redis.url, keyPrefix: redis.keyPrefix } } : {}),
          // One cookie secret for all: a visitor cookie from one process is good on every other. The tests' clients
          // are many people on one loopback address: no limits per address (per visitor they stay).
          channels: { web: { cookieSecret: TEST_SECRETS.cookieSecret, limits: { runsPerAddress: 0, newConversationsPerHourPerAddress: 0 } } },
          limits: { maxConcurrentModelCalls: 64 },
          log: { level: options.logLevel ?? 'warn' },
        },
        options.config ?? {},
      );
      registerRunSecrets(secretsOf(parseConfig(config)));
      const file = join(dir, `palaver-${label}.json`);
      writeFileSync(file, JSON.stringify(config));
      const proc = await startProcess(label, file, dir);
      processes.set(label, proc);
      cleanups.push(async () => {
        if (proc.alive) proc.resume();
        await proc.kill();
      });
    }

    let store: Promise<Store> | undefined;
    cleanups.push(async () => {
      if (store) await (await store).close();
    });
    return {
      databaseUrl: database.url,
      model,
      requests,
      processes: [...processes.values()],
      process(label) {
        const found = processes.get(label);
        if (!found) throw new Error(`no process ${label}`);
        return found;
      },
      store: () => (store ??= openStore(database.url, { migrate: false })),
      close: cleanUp,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

async function startProcess(label: string, configFile: string, cwd: string): Promise<ClusterProcess> {
  let child: RunningChild;
  let url = '';
  let alive = false;
  const spawnIt = async () => {
    child = spawnNode(PALAVER_BIN, ['start', '--config', configFile, '--port', '0'], { cwd, env: cleanEnv() });
    alive = true;
    void child.exited.then(() => (alive = false));
    const [, listening] = await child.waitForOutput(/Palaver is listening on (\S+)/, 60_000);
    url = listening!;
  };
  await spawnIt();
  return {
    label,
    get url() {
      return url;
    },
    get child() {
      return child;
    },
    get alive() {
      return alive;
    },
    async kill() {
      if (!alive) return;
      child.process.kill('SIGKILL');
      await child.exited;
    },
    pause() {
      if (alive) child.process.kill('SIGSTOP');
    },
    resume() {
      if (alive) child.process.kill('SIGCONT');
    },
    async restart() {
      if (alive) throw new Error(`process ${label} is still running`);
      await spawnIt();
    },
    async stop() {
      if (!alive) return;
      child.process.kill('SIGTERM');
      await child.waitForExit(20_000);
    },
  };
}

/** A visitor of the web chat: the cookie the page gave, good on every process of the cluster. */
export async function newVisitor(base: string): Promise<string> {
  const page = await fetch(`${base}/`);
  await page.body?.cancel();
  const setCookie = page.headers.getSetCookie()[0];
  if (page.status !== 200 || setCookie === undefined) throw new Error(`the page gave no cookie (${page.status})`);
  return setCookie.split(';')[0]!;
}

/** A web chat run (AG-UI RunAgentInput) with one user message; send it again as is to retry it. */
export interface WebRun {
  readonly threadId: string;
  readonly runId: string;
  readonly messages: readonly [{ readonly id: string; readonly role: 'user'; readonly content: string }];
}

let runs = 0;
export function webRun(threadId: string, text: string): WebRun {
  runs += 1;
  const id = `${Date.now().toString(36)}-${runs}`;
  return { threadId, runId: `run-${id}`, messages: [{ id: `m-${id}`, role: 'user', content: text }] };
}

/** What a run showed the visitor, once its stream ended. */
export interface RunResult {
  readonly status: number;
  readonly events: Array<Record<string, unknown> & { type: string }>;
  /** The streamed or replayed reply text. */
  readonly text: string;
  /** `RUN_FINISHED`'s `result.status` (`completed`, `duplicate`, …), `error` for RUN_ERROR, undefined when it never ended. */
  readonly finished: string | undefined;
  /** performance.now() when the stream ended. */
  readonly endedAt: number;
}

/** Posts `run` to `base`'s `/agui` as the visitor and reads the stream to its end. */
export async function postRun(base: string, cookie: string, run: WebRun, signal?: AbortSignal): Promise<RunResult> {
  const response = await fetch(`${base}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', cookie },
    body: JSON.stringify({ ...run, tools: [], context: [], state: {}, forwardedProps: {} }),
    ...(signal ? { signal } : {}),
  });
  const body = await response.text();
  const endedAt = performance.now();
  if (response.status !== 200) return { status: response.status, events: [], text: body, finished: undefined, endedAt };
  const events = parseSse(body);
  // As the chat page shows it: a message withdrawn by a `palaver.discard` event (text of a turn that did not store
  // it) leaves the screen.
  const discarded = new Set(
    events
      .filter((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.discard')
      .map((event) => String((event['value'] as { messageId?: unknown } | undefined)?.messageId)),
  );
  const text = events
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT' && !discarded.has(String(event['messageId'])))
    .map((event) => String(event['delta']))
    .join('');
  const last = events.at(-1);
  const finished =
    last?.type === 'RUN_FINISHED'
      ? String((last['result'] as { status?: string } | undefined)?.status ?? 'completed')
      : last?.type === 'RUN_ERROR'
        ? 'error'
        : undefined;
  return { status: response.status, events, text, finished, endedAt };
}

/** The texts of the user and assistant messages of a request, in order. */
export function conversationItems(call: ScriptedCall): Array<{ role: 'user' | 'assistant'; text: string }> {
  return call.messages.flatMap((item) =>
    item.type === 'message' && (item.role === 'user' || item.role === 'assistant') ? [{ role: item.role, text: item.content }] : [],
  );
}

/** A SQLite file of its own in a temp folder: processes on one machine share it. */
function sqliteFile(): { readonly url: string; drop(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-cluster-sqlite-'));
  return { url: `sqlite:${join(dir, 'palaver.db')}`, drop: () => rmSync(dir, { recursive: true, force: true }) };
}
