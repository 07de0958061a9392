/**
 * The inbox under load, through the whole pipeline: Palaver as it ships (dist), a SQLite file, a zero-latency
 * scripted model over real HTTP, and an in-memory messenger-like channel (outbox on, Telegram's 4096-character
 * limit) that records every part it is asked to send.
 *
 * 1. **Many conversations**: `conversations` people each send one message at the same moment; every message must be
 *    answered exactly once (no reply lost, none sent twice). Reports the time to drain and the peak RSS.
 * 2. **Burst latency**: with a quiet window (default 2500 ms, Telegram's), a person sends three messages 100 ms
 *    apart (four people at a time); measured from the third message's acceptance to the channel's `send` of the one reply. The goal is the
 *    quiet window + 50 ms at p99.
 *
 * Run by bench/run.ts (`--only inbox`); by hand: node --import tsx bench/inbox-load.ts [conversations=10000] [bursts=40]
 * [--v8-heap-growth] (the last leaves heap growth to V8's heuristics instead of `limits.heapGrowthPercent`)
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReplyTarget, SentPart } from '../src/domain/ports/channel.js';
import { startScriptedModelServer } from '../src/testing/index.js';

export interface InboxLoadResult {
  readonly conversations: number;
  readonly answered: number;
  readonly lost: number;
  readonly duplicates: number;
  readonly drainMs: number;
  readonly peakRssMb: number;
  readonly bursts: number;
  readonly quietWindowMs: number;
  readonly burstLatency: { readonly p50Ms: number; readonly p99Ms: number; readonly maxMs: number };
  readonly burstTurns: number;
}

/**
 * Runs the measurement in a child process of its own (its peak RSS is Palaver's), with the scripted model server
 * here in the parent, as the turn benchmarks do.
 */
export async function measureInboxLoad(options: { conversations: number; bursts: number; quietWindowMs?: number; defaultHeapGrowth?: boolean }): Promise<InboxLoadResult> {
  const model = await startScriptedModelServer({ script: () => ({ text: 'Noted.' }), maxRecordedCalls: 0 });
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', fileURLToPath(import.meta.url), '--child', JSON.stringify({ ...options, baseUrl: model.baseUrl })], {
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

async function measureInChild(options: { conversations: number; bursts: number; quietWindowMs?: number; defaultHeapGrowth?: boolean; baseUrl: string }): Promise<InboxLoadResult> {
  const { createPalaver, silentLogger } = (await import(new URL('../dist/index.js', import.meta.url).href)) as typeof import('../src/index.js');
  const { MemoryChannel } = (await import(new URL('../dist/channels/memory/memory-channel.js', import.meta.url).href)) as typeof import('../src/channels/memory/memory-channel.js');
  const quietWindowMs = options.quietWindowMs ?? 2500;
  const dir = mkdtempSync(join(tmpdir(), 'palaver-inbox-bench-'));
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');

  /** Counts sends per answered message and stamps when each reply left. */
  class CountingChannel extends MemoryChannel {
    readonly sendsPerMessage = new Map<string, number>();
    readonly sentAt = new Map<string, number>();
    override async send(target: ReplyTarget, text: string): Promise<SentPart> {
      const now = performance.now();
      for (const id of target.inReplyTo) {
        this.sendsPerMessage.set(id, (this.sendsPerMessage.get(id) ?? 0) + 1);
        this.sentAt.set(id, now);
      }
      return super.send(target, text);
    }
  }
  const crowd = new CountingChannel({ name: 'crowd', record: false, capabilities: { offlineDelivery: true, maxMessageChars: 4096 } });
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
  // The process as `palaver start` runs it: with the heap growth limit its config sets.
  const { limitHeapGrowth } = (await import(new URL('../dist/cli/heap-growth.js', import.meta.url).href)) as typeof import('../src/cli/heap-growth.js');
  if (!options.defaultHeapGrowth) limitHeapGrowth(palaver.config.limits.heapGrowthPercent);
  try {
    // 1. Everyone at once.
    const started = performance.now();
    const said = await Promise.all(Array.from({ length: options.conversations }, (_, i) => crowd.say('hello', { accountId: `p${i}`, messageId: `m${i}` })));
    await Promise.all(said.map((message) => crowd.reply(message)));
    const drainMs = performance.now() - started;
    const counts = said.map((message) => crowd.sendsPerMessage.get(message.messageId) ?? 0);

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
      conversations: options.conversations,
      answered: counts.filter((count) => count === 1).length,
      lost: counts.filter((count) => count === 0).length,
      duplicates: counts.filter((count) => count > 1).length,
      drainMs,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      bursts: options.bursts,
      quietWindowMs,
      burstLatency: { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: latencies.at(-1)! },
      burstTurns,
    };
  } finally {
    await palaver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--child') {
    console.log(JSON.stringify(await measureInChild(JSON.parse(process.argv[3]!) as Parameters<typeof measureInChild>[0])));
  } else {
    console.log(JSON.stringify(await measureInboxLoad({ conversations: Number(process.argv[2] ?? 10_000), bursts: Number(process.argv[3] ?? 40), defaultHeapGrowth: process.argv.includes('--v8-heap-growth') })));
  }
}
