/**
 * The inbox under load, through the whole pipeline: Palaver as it ships (dist), a SQLite file, a zero-latency
 * scripted model over real HTTP, and an in-memory messenger-like channel (outbox on, Telegram's 4096-character
 * limit) that records every part it is asked to send.
 *
 * 1. **Many conversations, each with a burst pending**: `conversations` people write at the same moment, each a burst
 *    of `burst` messages (default 3) within the crowd's quiet window: the crowd sends its first messages all at once,
 *    then (once they are stored) its second ones, and so on, so every conversation holds its whole burst in the
 *    inbox at the same time and one turn answers it. Every message must be answered exactly once (no reply lost, none
 *    sent twice); reports how many conversations got their burst answered in one reply, the time to accept and to
 *    drain, and the peak RSS (with the heap at that moment). The crowd's quiet window (`--crowd-quiet-window`,
 *    default 2500 ms, Telegram's, raised to cover one round of accepts at 100,000) must outlast one round of
 *    accepts, or bursts split into several turns (still each message answered once).
 * 2. **Burst latency**: with a quiet window (default 2500 ms, Telegram's), a person sends three messages 100 ms
 *    apart (four people at a time); measured from the third message's acceptance to the channel's `send` of the one reply. The goal is the
 *    quiet window + 50 ms at p99.
 *
 * Run by bench/run.ts (`--only inbox`, `--inbox-conversations 100000`); by hand:
 *   node --import tsx bench/inbox-load.ts [conversations=10000] [bursts=40] [--burst 3] [--crowd-quiet-window ms]
 *     [--heap-snapshot dir] [--trace]
 * `--heap-snapshot` writes a heap snapshot into `dir` once every burst is pending (the last round accepted, no turn started yet);
 * `--trace` prints memory and progress to stderr every second.
 */
import { spawn } from 'node:child_process';
import { buildSync } from 'esbuild';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import type { ReplyTarget, SentPart, TurnEnd } from '../src/domain/ports/channel.js';
import { startScriptedModelServer } from '../src/testing/index.js';

export interface InboxLoadOptions {
  readonly conversations: number;
  /** Bursts measured for latency (phase 2). */
  readonly bursts: number;
  /** Messages each conversation of the crowd sends (default 3). */
  readonly burst?: number;
  /** The paced bursts' quiet window (default 2500 ms). */
  readonly quietWindowMs?: number;
  /** The crowd's quiet window (default {@link defaultCrowdQuietWindowMs}). */
  readonly crowdQuietWindowMs?: number;
  /** A directory to write a heap snapshot into once every burst is pending. */
  readonly heapSnapshotDir?: string;
  /** Prints memory (RSS anonymous and file-backed, heap, external) and progress to stderr every second. */
  readonly trace?: boolean;
}

export interface InboxLoadResult {
  readonly conversations: number;
  /** Messages per conversation in the crowd, and the crowd's quiet window. */
  readonly burst: number;
  readonly crowdQuietWindowMs: number;
  /** Messages of the crowd answered exactly once, never, more than once; turns that ended with an error instead. */
  readonly answered: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly failed: number;
  /** Conversations whose whole burst was answered by one reply. */
  readonly oneReply: number;
  /** Replies the crowd got (one per turn). */
  readonly replies: number;
  /** From the first message to the last one stored, and to the last reply settled. */
  readonly acceptMs: number;
  readonly drainMs: number;
  readonly peakRssMb: number;
  /** RSS once Palaver started (before the crowd), and the peak until the last message was stored. */
  readonly startRssMb: number;
  readonly acceptPeakRssMb: number;
  /** The heap at the highest sampled RSS (every 50 ms). */
  readonly atPeak: { readonly rssMb: number; readonly heapUsedMb: number; readonly heapTotalMb: number; readonly externalMb: number };
  readonly bursts: number;
  readonly quietWindowMs: number;
  readonly burstLatency: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  readonly burstTurns: number;
}

/**
 * The crowd's quiet window: Telegram's 2500 ms, or longer when one round of accepts (every conversation's next
 * message) takes longer than that on this machine (about 1 s per 4,000 messages here): a person's messages must
 * stay within one window of each other for the burst to be pending as one.
 */
export function defaultCrowdQuietWindowMs(conversations: number): number {
  return Math.max(2500, Math.ceil(conversations / 4000) * 1000);
}

/**
 * Runs the measurement in a child process of its own (its peak RSS is Palaver's), with the scripted model server
 * here in the parent, as the turn benchmarks do. The child runs under plain `node`, this file bundled by esbuild into
 * .bench/inbox-load.mjs (as bench/run.ts does for its other scenarios): under tsx's loader every dist module Palaver
 * loads kept an inline source map, some 40 MB of the child's resident set that Palaver never holds.
 */
export async function measureInboxLoad(options: InboxLoadOptions): Promise<InboxLoadResult> {
  const model = await startScriptedModelServer({ script: () => ({ text: 'Noted.' }), maxRecordedCalls: 0 });
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--no-warnings', childEntry(), '--child', JSON.stringify({ ...options, baseUrl: model.baseUrl })], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`inbox-load child exited with ${code}`))));
    });
    return JSON.parse(output.trim().split('\n').at(-1)!) as InboxLoadResult;
  } finally {
    await model.close();
  }
}

/** This file as plain JavaScript for the child (itself when it already is). */
function childEntry(): string {
  const self = fileURLToPath(import.meta.url);
  if (!self.endsWith('.ts')) return self;
  // .bench/ sits beside bench/, so `new URL('../dist/…', import.meta.url)` in the child still finds dist.
  const entry = join(dirname(self), '..', '.bench', 'inbox-load.mjs');
  buildSync({
    entryPoints: [self],
    outfile: entry,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  return entry;
}

async function measureInChild(options: InboxLoadOptions & { baseUrl: string }): Promise<InboxLoadResult> {
  const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
  const { MemoryChannel } = (await import(
    new URL('../dist/channels/memory/memory-channel.js', import.meta.url).href
  )) as typeof import('../src/channels/memory/memory-channel.js');
  const quietWindowMs = options.quietWindowMs ?? 2500;
  const conversations = options.conversations;
  const burstSize = options.burst ?? 3;
  const crowdQuietWindowMs = options.crowdQuietWindowMs ?? defaultCrowdQuietWindowMs(conversations);
  const dir = mkdtempSync(join(tmpdir(), 'palaver-inbox-bench-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');

  /** Counts sends per answered message and stamps when each reply left. */
  class CountingChannel extends MemoryChannel {
    readonly sentAt = new Map<string, number>();
    override async send(target: ReplyTarget, text: string): Promise<SentPart> {
      const now = performance.now();
      for (const id of target.inReplyTo) this.sentAt.set(id, now);
      return super.send(target, text);
    }
  }

  // The crowd's bookkeeping lives in typed arrays and counters: what this process holds beyond them is Palaver's.
  const sendsPerMessage = new Uint8Array(conversations * burstSize);
  const repliesPerConversation = new Uint8Array(conversations);
  const messageIndex = (messageId: string): number => {
    const [conversation, position] = messageId.slice(1).split('.');
    return Number(conversation) * burstSize + Number(position);
  };
  let settled = 0;
  let failed = 0;
  let lastSettledAt = performance.now();
  let allSettled: () => void = () => {};
  const everyoneSettled = new Promise<void>((resolve) => (allSettled = resolve));
  /** The crowd's channel: counts sends and settles, keeps nothing per message (a plain MemoryChannel keeps replies nobody collects). */
  const crowd = new (class extends MemoryChannel {
    readonly inbox = { quietWindowMs: crowdQuietWindowMs, maxWaitMs: crowdQuietWindowMs * 4 };
    override async send(target: ReplyTarget): Promise<SentPart> {
      for (const id of target.inReplyTo) {
        const index = messageIndex(id);
        sendsPerMessage[index] = Math.min(255, sendsPerMessage[index]! + 1);
      }
      const conversation = Math.floor(messageIndex(target.inReplyTo[0]!) / burstSize);
      repliesPerConversation[conversation] = Math.min(255, repliesPerConversation[conversation]! + 1);
      return { messageId: `${target.correlationId}:1` };
    }
    override settle(target: ReplyTarget, end: TurnEnd): void {
      settled += target.inReplyTo.length;
      if (end.kind !== 'answered') failed += target.inReplyTo.length;
      lastSettledAt = performance.now();
      if (settled >= conversations * burstSize) allSettled();
    }
  })({ name: 'crowd', record: false, capabilities: { offlineDelivery: true, maxMessageChars: 4096 } });
  const paced = new (class extends CountingChannel {
    readonly inbox = { quietWindowMs, maxWaitMs: quietWindowMs * 4 };
  })({ name: 'paced', record: false, capabilities: { offlineDelivery: true, maxMessageChars: 4096 } });

  const palaver = await createPalaver(
    {
      model: { name: 'scripted', baseUrl: options.baseUrl, maxRetries: 0, timeoutMs: 120_000, prices: { scripted: { input: '0.40', output: '1.60' } } },
      database: { url: `sqlite:${join(dir, 'palaver.db')}` },
      agent: { instructionsDir: join(dir, 'instructions') },
      channels: { web: { enabled: false } },
      limits: { maxConcurrentModelCalls: 64 },
      log: { level: 'silent' },
    },
    { logger: silentLogger(), channels: [crowd, paced] },
  );
  const startRssMb = process.memoryUsage().rss / 1048576;
  let atPeak = { rssMb: 0, heapUsedMb: 0, heapTotalMb: 0, externalMb: 0 };
  const sampler = setInterval(() => {
    const usage = process.memoryUsage();
    const rssMb = usage.rss / 1048576;
    if (rssMb > atPeak.rssMb)
      atPeak = { rssMb, heapUsedMb: usage.heapUsed / 1048576, heapTotalMb: usage.heapTotal / 1048576, externalMb: usage.external / 1048576 };
  }, 50);
  let phase = 'accepting';
  const traceStarted = performance.now();
  const tracer = options.trace
    ? setInterval(() => {
        const status = readFileSync('/proc/self/status', 'utf8');
        const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
        const usage = process.memoryUsage();
        const mb = (bytes: number) => (bytes / 1048576).toFixed(0);
        console.error(
          `${((performance.now() - traceStarted) / 1000).toFixed(0).padStart(4)} s ${phase.padEnd(9)} settled ${String(settled).padStart(7)}  rss ${(kb('VmRSS') / 1024).toFixed(0)} ` +
            `(anon ${(kb('RssAnon') / 1024).toFixed(0)}, file ${(kb('RssFile') / 1024).toFixed(0)})  heap ${mb(usage.heapUsed)}/${mb(usage.heapTotal)} ` +
            `(${getHeapSpaceStatistics()
              .filter((space) => space.space_size > 1048576)
              .map((space) => `${space.space_name.replace('_space', '')} ${mb(space.space_used_size)}/${mb(space.space_size)}`)
              .join(', ')})  external ${mb(usage.external)}  threads ${kb('Threads')}`,
        );
      }, 1000)
    : undefined;
  try {
    // 1. Everyone at once, each with a burst: round k sends every conversation's k-th message, once round k-1 is stored.
    const started = performance.now();
    for (let position = 0; position < burstSize; position += 1) {
      let refused = 0;
      await Promise.all(
        Array.from({ length: conversations }, (_, i) =>
          crowd.say(`hello ${position + 1}`, { accountId: `p${i}`, messageId: `c${i}.${position}` }).then(
            () => undefined,
            () => void (refused += 1),
          ),
        ),
      );
      if (refused > 0) throw new Error(`${refused} messages of round ${position + 1} were refused`);
    }
    const acceptMs = performance.now() - started;
    const acceptPeakRssMb = process.resourceUsage().maxRSS / 1024;
    phase = 'answering';
    if (options.heapSnapshotDir)
      console.error(`heap snapshot: ${writeHeapSnapshot(join(options.heapSnapshotDir, `inbox-${conversations}-pending.heapsnapshot`))}`);
    // A reply that never comes shows as lost once nothing has settled for a minute (past the quiet windows).
    lastSettledAt = performance.now();
    const stalled = new Promise<void>((resolve) => {
      const watch = setInterval(() => {
        if (performance.now() - lastSettledAt > 60_000 + crowdQuietWindowMs * 4) {
          clearInterval(watch);
          resolve();
        }
      }, 1000);
      void everyoneSettled.then(() => clearInterval(watch));
    });
    await Promise.race([everyoneSettled, stalled]);
    const drainMs = performance.now() - started;
    let answered = 0;
    let lost = 0;
    let duplicates = 0;
    for (const count of sendsPerMessage) {
      if (count === 1) answered += 1;
      else if (count === 0) lost += 1;
      else duplicates += 1;
    }
    let oneReply = 0;
    let replies = 0;
    for (const count of repliesPerConversation) {
      replies += count;
      if (count === 1) oneReply += 1;
    }

    phase = 'bursts';
    // 2. Bursts of three, in four lanes of conversations one after another (independent people, not a
    //    synchronised crowd), each measured from its last message to its reply's send.
    const latencies: number[] = [];
    let burstTurns = 0;
    const lanes = 4;
    await Promise.all(
      Array.from({ length: lanes }, async (_, lane) => {
        for (let b = lane; b < options.bursts; b += lanes) await burst(b);
      }),
    );
    async function burst(b: number): Promise<void> {
      {
        const account = { accountId: `burst-${b}` };
        await paced.say('one', { ...account, messageId: `b${b}-1` });
        await new Promise((resolve) => setTimeout(resolve, 100));
        await paced.say('two', { ...account, messageId: `b${b}-2` });
        await new Promise((resolve) => setTimeout(resolve, 100));
        const last = await paced.say('three', { ...account, messageId: `b${b}-3` });
        const lastAt = performance.now();
        const reply = await paced.reply(last);
        if (reply.outcome.status === 'completed') burstTurns += 1;
        latencies.push(paced.sentAt.get(last.messageId)! - lastAt);
      }
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
    return {
      conversations,
      burst: burstSize,
      crowdQuietWindowMs,
      answered,
      lost,
      duplicates,
      failed,
      oneReply,
      replies,
      acceptMs,
      drainMs,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      startRssMb,
      acceptPeakRssMb,
      atPeak,
      bursts: options.bursts,
      quietWindowMs,
      burstLatency: { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: latencies.at(-1)! },
      burstTurns,
    };
  } finally {
    clearInterval(sampler);
    clearInterval(tracer);
    await palaver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--child') {
    console.log(JSON.stringify(await measureInChild(JSON.parse(process.argv[3]!) as Parameters<typeof measureInChild>[0])));
  } else {
    const args = process.argv.slice(2);
    const flag = (name: string): string | undefined => {
      const at = args.indexOf(name);
      if (at < 0) return undefined;
      const [value] = args.splice(at, 2).slice(1);
      return value;
    };
    const burst = flag('--burst');
    const crowdQuietWindowMs = flag('--crowd-quiet-window');
    const heapSnapshotDir = flag('--heap-snapshot');
    const trace = args.includes('--trace');
    const [conversations, bursts] = args.filter((arg) => !arg.startsWith('--'));
    console.log(
      JSON.stringify(
        await measureInboxLoad({
          conversations: Number(conversations ?? 10_000),
          bursts: Number(bursts ?? 40),
          trace,
          ...(burst === undefined ? {} : { burst: Number(burst) }),
          ...(crowdQuietWindowMs === undefined ? {} : { crowdQuietWindowMs: Number(crowdQuietWindowMs) }),
          ...(heapSnapshotDir === undefined ? {} : { heapSnapshotDir }),
        }),
      ),
    );
  }
}
