/**
 * Latency a person feels (issue #26): how long Palaver itself holds a message before the reply's first words show.
 * `node bin/palaver.js start --config <file>` (the compiled dist, as shipped, on a SQLite file in a temp folder) in a
 * child process; the scripted model server (Chat Completions streamed word by word, 15 ms apart, after a fixed time
 * to first byte), the clients and
 * the fake Telegram Bot API live here, in this process, so every moment below is read on one clock
 * (`performance.now()` of this process).
 *
 * - **web**: the web channel over real HTTP: `POST /agui` with a RunAgentInput (a visitor cookie per person), the SSE
 *   stream read as it arrives. Palaver's own time of a message = (first TEXT_MESSAGE_CONTENT event read − POST sent)
 *   − (the model's first byte sent − the model request received). `concurrency` conversations at once, each its own
 *   person sending `messagesPerPerson` messages one after the other, with a think time between a reply's end and the
 *   next message; the first message of every person is not measured (a new visitor, a new session).
 * - **telegram**: the bot channel (long polling, drafts on) against the fake Bot API. Each burst is a new private
 *   chat sending three messages; the last one is handed to the bot by a waiting `getUpdates`. Palaver's own time =
 *   (the first non-empty `sendMessageDraft` arriving at the fake − the last message handed out) − the quiet window −
 *   the model's time to first byte.
 *
 * Used by bench/run.ts (`--only latency`); by hand: `node --import tsx bench/latency.ts [--quick]` after `npm run build`.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  startFakeTelegram,
  startScriptedModelServer,
  type FakeTelegram,
  type ModelTiming,
  type ScriptedCall,
  type ScriptedModelServer,
} from '../src/testing/index.js';
import { listeningUrl } from './listening-url.js';
import { visitor } from './web-visitor.js';
import { procCpuMs } from './start-demo.js';
import { summarize, type LatencySummary } from './stats.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const COOKIE_SECRET = `bench-cookie-secret-${randomBytes(16).toString('hex')}`;
/** What the model streams: a short answer, word by word. */
const ANSWER = 'Sure: your parcel left the depot this morning and should reach you tomorrow before noon.';
/** Between two streamed words, ms: a model writing about 70 tokens a second. */
const WORD_GAP_MS = 15;

export interface WebLatencyOptions {
  /** Conversations at once. */
  readonly concurrency: number;
  /** People, each in a conversation of their own (taken in turn by the `concurrency` workers). */
  readonly people: number;
  /** Messages per person, the first one not measured. */
  readonly messagesPerPerson: number;
  /** A person's pause between a reply's end and their next message: uniform in [0, 2 × mean] ms. */
  readonly thinkMeanMs: number;
  /** The model's fixed time to first byte, ms. */
  readonly modelTtfbMs: number;
  /** Where the Palaver child writes its CPU profile (`--cpu-prof`), if anywhere. */
  readonly profileDir?: string | undefined;
  /** Measure the floor instead: bench/latency-floor.ts, a relay that does nothing else, in Palaver's place. */
  readonly floor?: boolean;
}

export interface WebLatencyResult {
  readonly concurrency: number;
  readonly messages: number;
  /** Palaver's own time to the first token, ms. */
  readonly own: LatencySummary;
  /** POST sent → first TEXT_MESSAGE_CONTENT read, ms (the model's time included). */
  readonly firstToken: LatencySummary;
  /** The model's time to first byte as its server saw it, ms. */
  readonly model: LatencySummary;
  /** The Palaver process's CPU time per measured message, ms (/proc/<pid>/stat, 10 ms ticks). */
  readonly cpuMsPerMessage: number;
  readonly failed: number;
}

export interface TelegramLatencyOptions {
  readonly bursts: number;
  readonly quietWindowMs: number;
  readonly modelTtfbMs: number;
  readonly profileDir?: string | undefined;
}

export interface TelegramLatencyResult {
  readonly bursts: number;
  readonly quietWindowMs: number;
  /** Last message handed out → first draft at the fake, minus the quiet window and the model's time to first byte, ms. */
  readonly own: LatencySummary;
  /** Last message handed out → first draft at the fake, ms. */
  readonly firstDraft: LatencySummary;
  readonly failed: number;
}

/** The model's timing per tag (a word the bench puts into each message, e.g. `t17`), as its server saw it. */
class ModelClock {
  readonly #timings = new Map<string, ModelTiming>();
  readonly #waiters = new Map<string, (timing: ModelTiming) => void>();

  note(call: ScriptedCall, timing: ModelTiming): void {
    const tag = tagOf(call);
    if (tag === undefined) return;
    this.#timings.set(tag, timing);
    this.#waiters.get(tag)?.(timing);
    this.#waiters.delete(tag);
  }

  /** The timing of the request that carried `tag` (it may be told a moment after the client saw the first token). */
  take(tag: string): Promise<ModelTiming> {
    const timing = this.#timings.get(tag);
    if (timing) {
      this.#timings.delete(tag);
      return Promise.resolve(timing);
    }
    return new Promise((resolveTiming) => this.#waiters.set(tag, resolveTiming));
  }
}

async function startModel(ttfbMs: number): Promise<{ server: ScriptedModelServer; clock: ModelClock }> {
  const clock = new ModelClock();
  const server = await startScriptedModelServer({
    maxRecordedCalls: 10,
    maxStoredResponses: 10,
    onAnswered: (call, timing) => clock.note(call, timing),
    script: async () => {
      if (ttfbMs > 0) await new Promise((resolveDelay) => setTimeout(resolveDelay, ttfbMs));
      return { text: ANSWER, streamGapMs: WORD_GAP_MS };
    },
  });
  return { server, clock };
}

export async function measureWebLatency(options: WebLatencyOptions): Promise<WebLatencyResult> {
  const { server, clock } = await startModel(options.modelTtfbMs);
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-latency-'));
  try {
    const palaver = options.floor
      ? await startChild(repoRoot, [join(repoRoot, 'bench', 'latency-floor.ts'), server.baseUrl], ['--import', 'tsx'])
      : await startPalaver(dir, server.baseUrl, { channels: { web: { cookieSecret: COOKIE_SECRET } } }, options.profileDir);
    try {
      return await converseAll(palaver, clock, options);
    } finally {
      await palaver.stop();
    }
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function converseAll(palaver: Palaver, clock: ModelClock, options: WebLatencyOptions): Promise<WebLatencyResult> {
  const own: number[] = [];
  const firstToken: number[] = [];
  const model: number[] = [];
  let failed = 0;
  let nextPerson = 0;
  let nextTag = 0;
  let cpuStart: number | undefined;
  let measuring = 0;
  const think = () => new Promise((resolveThink) => setTimeout(resolveThink, Math.random() * 2 * options.thinkMeanMs));
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (nextPerson < options.people) {
        const person = nextPerson++;
        const cookie = await visitor(palaver.url);
        const threadId = `person-${person}-${randomBytes(4).toString('hex')}`;
        for (let message = 0; message < options.messagesPerPerson; message += 1) {
          if (message > 0) await think();
          const tag = `t${nextTag++}`;
          const measured = message > 0;
          if (measured && cpuStart === undefined) cpuStart = procCpuMs(palaver.pid);
          const run = await post(palaver.url, cookie, threadId, `${tag} where is my parcel, please?`);
          if (!run.ok || run.firstTokenAt === undefined) {
            failed += 1;
            continue;
          }
          const timing = await clock.take(tag);
          if (!measured) continue;
          measuring += 1;
          const seen = run.firstTokenAt - run.sentAt;
          const modelMs = timing.firstByteAt - timing.receivedAt;
          firstToken.push(seen);
          model.push(modelMs);
          own.push(seen - modelMs);
        }
      }
    }),
  );
  const cpuMs = cpuStart === undefined ? 0 : procCpuMs(palaver.pid) - cpuStart;
  return {
    concurrency: options.concurrency,
    messages: own.length,
    own: summarize(own),
    firstToken: summarize(firstToken),
    model: summarize(model),
    cpuMsPerMessage: measuring > 0 ? cpuMs / measuring : 0,
    failed,
  };
}

export async function measureTelegramLatency(options: TelegramLatencyOptions): Promise<TelegramLatencyResult> {
  const { server, clock } = await startModel(options.modelTtfbMs);
  const telegram = await startFakeTelegram();
  const dir = mkdtempSync(join(tmpdir(), 'palaver-bench-latency-telegram-'));
  try {
    const channels = {
      web: { enabled: false },
      telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: options.quietWindowMs, drafts: true },
    };
    const palaver = await startPalaver(dir, server.baseUrl, { channels }, options.profileDir);
    try {
      return await burstAll(telegram, clock, options);
    } finally {
      await palaver.stop();
    }
  } finally {
    await telegram.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function burstAll(telegram: FakeTelegram, clock: ModelClock, options: TelegramLatencyOptions): Promise<TelegramLatencyResult> {
  const warmUp = 3;
  const own: number[] = [];
  const firstDraft: number[] = [];
  let failed = 0;
  for (let burst = 0; burst < warmUp + options.bursts; burst += 1) {
    const chatId = 50_000 + burst;
    const tag = `t${burst}`;
    telegram.sendText({ chatId, text: `${tag} hello` });
    telegram.sendText({ chatId, text: `${tag} one more thing` });
    // The last message goes out on a poll that waits for it, so the moment it is handed to the bot is now.
    await waitUntil(() => pollHasNothing(telegram));
    const draft = telegram
      .waitForCall('sendMessageDraft', (call) => call.params['chat_id'] === chatId && String(call.params['text'] ?? '') !== '', { timeoutMs: 30_000 })
      .then(() => performance.now());
    const handedAt = performance.now();
    telegram.sendText({ chatId, text: `${tag} where is my parcel, please?` });
    try {
      const draftAt = await draft;
      const timing = await clock.take(tag);
      await telegram.waitForMessages(1, { chatId, timeoutMs: 30_000 });
      if (burst < warmUp) continue;
      firstDraft.push(draftAt - handedAt);
      own.push(draftAt - handedAt - options.quietWindowMs - (timing.firstByteAt - timing.receivedAt));
    } catch {
      failed += 1;
    }
  }
  return { bursts: options.bursts, quietWindowMs: options.quietWindowMs, own: summarize(own), firstDraft: summarize(firstDraft), failed };
}

/** True when every update sent so far was handed to the bot (the waiting poll has nothing yet). */
function pollHasNothing(telegram: FakeTelegram): boolean {
  const polls = telegram.calls.filter((call) => call.method === 'getUpdates');
  const last = polls.at(-1);
  if (!last || last.answeredAt !== undefined) return false;
  const lastUpdate = telegram.updates.at(-1)?.update_id ?? 0;
  return Number(last.params['offset'] ?? 0) > lastUpdate;
}

async function waitUntil(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('timed out waiting for the bot to poll');
    await new Promise((resolveTimer) => setTimeout(resolveTimer, 1));
  }
}

interface Palaver {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** `palaver start --config <file>` on a SQLite file in `dir`, the model at `modelBaseUrl`; resolves once it listens. */
async function startPalaver(dir: string, modelBaseUrl: string, extra: Record<string, unknown>, profileDir: string | undefined): Promise<Palaver> {
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  const configFile = join(dir, 'palaver.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      model: { name: 'scripted-model', baseUrl: modelBaseUrl, apiKey: 'bench-model-key', maxRetries: 0, timeoutMs: 60_000 },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions') },
      limits: { maxConcurrentModelCalls: 64 },
      log: { level: 'warn' },
      ...extra,
    }),
  );
  const nodeFlags = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  return startChild(dir, [join(repoRoot, 'bin', 'palaver.js'), 'start', '--config', configFile, '--port', '0'], nodeFlags);
}

/** `node <nodeFlags> <args>` in the folder `dir`; resolves once it prints the URL it listens on. */
async function startChild(dir: string, args: readonly string[], nodeFlags: readonly string[]): Promise<Palaver> {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PALAVER_') || key.startsWith('TELEGRAM_') || key === 'NODE_OPTIONS') delete env[key];
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...nodeFlags, ...args], { cwd: dir, env, stdio: 'pipe' });
  const url = await listeningUrl(child, String(args[0]));
  return {
    url,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
      // SIGTERM: a clean exit, which writes the CPU profile.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** One run: POST /agui, the SSE stream read as it comes; when it was sent and when the first text content was read. */
async function post(base: string, cookie: string, threadId: string, text: string): Promise<{ ok: boolean; sentAt: number; firstTokenAt: number | undefined }> {
  const id = randomBytes(8).toString('hex');
  const body = JSON.stringify({
    threadId,
    runId: `run-${id}`,
    messages: [{ id: `m-${id}`, role: 'user', content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
  });
  const sentAt = performance.now();
  let firstTokenAt: number | undefined;
  try {
    const response = await fetch(`${base}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', cookie },
      body,
    });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      return { ok: false, sentAt, firstTokenAt };
    }
    const decoder = new TextDecoder();
    let seen = '';
    for await (const chunk of response.body) {
      seen += decoder.decode(chunk as Uint8Array, { stream: true });
      if (firstTokenAt === undefined && seen.includes('"type":"TEXT_MESSAGE_CONTENT"')) firstTokenAt = performance.now();
    }
    return { ok: seen.includes('"type":"RUN_FINISHED"'), sentAt, firstTokenAt };
  } catch {
    return { ok: false, sentAt, firstTokenAt };
  }
}

/** The bench's tag (`t<n>`) in the request's user messages. */
function tagOf(call: ScriptedCall): string | undefined {
  for (let i = call.messages.length - 1; i >= 0; i -= 1) {
    const item = call.messages[i]!;
    if (item.type !== 'message' || item.role !== 'user') continue;
    const tag = /\bt\d+\b/.exec(item.content)?.[0];
    if (tag !== undefined) return tag;
  }
  return undefined;
}

/** The figures as lines of text, as bench/run.ts prints them. */
export function describeWebLatency(result: WebLatencyResult, floor = false): string {
  const f = (summary: LatencySummary) => `p50 ${summary.p50Ms.toFixed(2)} ms, p99 ${summary.p99Ms.toFixed(2)} ms`;
  return (
    `${floor ? "floor (a bare relay in Palaver's place) " : ''}web c=${result.concurrency}: ${result.messages} messages; ${floor ? "the relay's" : "Palaver's"} own time to the first token ${f(result.own)} (mean ${result.own.meanMs.toFixed(2)}, max ${result.own.maxMs.toFixed(1)}); ` +
    `POST → first token ${f(result.firstToken)}; model's first byte ${result.model.p50Ms.toFixed(1)} ms; CPU ${result.cpuMsPerMessage.toFixed(2)} ms/message${result.failed ? `; FAILED ${result.failed}` : ''}`
  );
}

export function describeTelegramLatency(result: TelegramLatencyResult): string {
  return (
    `telegram: ${result.own.count}/${result.bursts} bursts; last message → first draft p50 ${result.firstDraft.p50Ms.toFixed(1)} ms, p99 ${result.firstDraft.p99Ms.toFixed(1)} ms; ` +
    `minus the quiet window (${result.quietWindowMs} ms) and the model's first byte: p50 ${result.own.p50Ms.toFixed(2)} ms, p99 ${result.own.p99Ms.toFixed(2)} ms${result.failed ? `; FAILED ${result.failed}` : ''}`
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  for (const concurrency of [1, 64]) {
    const people = concurrency === 1 ? (quick ? 10 : 60) : quick ? 64 : 192;
    console.log(
      describeWebLatency(
        await measureWebLatency({ concurrency, people, messagesPerPerson: quick ? 3 : 6, thinkMeanMs: concurrency === 1 ? 0 : 500, modelTtfbMs: 20 }),
      ),
    );
  }
  console.log(describeTelegramLatency(await measureTelegramLatency({ bursts: quick ? 5 : 20, quietWindowMs: 500, modelTtfbMs: 20 })));
}
