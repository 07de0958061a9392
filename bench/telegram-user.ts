/**
 * The Telegram user account under `palaver start --demo` (compiled, as an application runs it), the channel on the
 * fake MTProto server served from here over loopback (`channels.telegramUser.fakeServerUrl`), signed in through a
 * session file made on the fake:
 * - burst → reply latency: `bursts` chats one after another (after three unmeasured ones) each send three messages at
 *   once, answered by the demo model in one call; the time from the last message leaving the fake to the reply
 *   reaching it, and that minus the quiet window (goal: quiet window + 50 ms);
 * - memory: the resident set after start (channel connected), then 3 s and 40 s into the idleness after the bursts.
 *
 * By hand: node --import tsx bench/telegram-user.ts [bursts=20] [quietWindowMs=500]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { FakeMtproto, fakeMtprotoLink, serveFakeMtproto, signInSessionFile } from '../src/testing/fake-mtproto/index.js';
import { procStatusMb } from './start-demo.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WARM_UP_BURSTS = 3;

export interface TelegramUserResult {
  readonly bursts: number;
  readonly answered: number;
  readonly quietWindowMs: number;
  /** Last message of a burst → its reply at the fake, ms. */
  readonly latencyP50Ms: number;
  readonly latencyP95Ms: number;
  /** The same minus the quiet window: what Palaver adds (goal ≤ 50 ms). */
  readonly overheadP50Ms: number;
  readonly overheadP95Ms: number;
  readonly rssAfterStartMb: number;
  readonly idle3sRssMb: number;
  readonly idle40sRssMb: number;
  readonly peakRssMb: number;
}

export async function measureTelegramUser(bursts = 20, quietWindowMs = 500): Promise<TelegramUserResult> {
  const telegram = new FakeMtproto({ self: { id: 100, firstName: 'Reception' } });
  const server = await serveFakeMtproto(telegram);
  const cwd = mkdtempSync(join(tmpdir(), 'palaver-bench-telegram-user-'));
  mkdirSync(join(cwd, 'data'), { mode: 0o700 });
  const sessionFile = join(cwd, 'data', 'telegram-user.session');
  await signInSessionFile(fakeMtprotoLink(telegram), sessionFile);
  writeFileSync(
    join(cwd, 'palaver.config.json'),
    JSON.stringify({
      channels: {
        web: { enabled: false },
        telegramUser: { apiId: 12345, apiHash: '0123456789abcdef0123456789abcdef', sessionFile, fakeServerUrl: server.url, quietWindowMs },
      },
    }),
  );
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('PALAVER_') || name.startsWith('TELEGRAM_') || name === 'NODE_OPTIONS') delete env[name];
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'palaver.js'), 'start', '--demo', '--port', '0', '-c', join(cwd, 'palaver.config.json')], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await new Promise<void>((resolveReady, reject) => {
      let output = '';
      const collect = (data: Buffer) => {
        output += data.toString();
        if (/listening on/.test(output)) resolveReady();
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', (data: Buffer) => (output += data.toString()));
      child.once('exit', (code) => reject(new Error(`palaver start exited (${code}) before listening:\n${output}`)));
    });
    const pid = child.pid!;
    const rssAfterStartMb = procStatusMb(pid, 'VmRSS');
    const latencies: number[] = [];
    // Three bursts first, not measured: the first turns load and compile code the later ones find ready.
    for (let index = 0; index < WARM_UP_BURSTS + bursts; index += 1) {
      const person = telegram.addUser();
      telegram.incoming(person.id, 'hello');
      telegram.incoming(person.id, 'one more thing');
      // Plain words (the demo model answers them in one call, no tool): what is measured is the way there and back.
      telegram.incoming(person.id, 'thanks, that is all');
      const lastAt = performance.now();
      await telegram.waitForSent(1, { chatId: person.id, timeoutMs: 30_000 });
      if (index >= WARM_UP_BURSTS) latencies.push(performance.now() - lastAt);
    }
    const answered = new Set(telegram.sent().map((message) => message.chatId)).size - WARM_UP_BURSTS;
    await new Promise((resolveTimer) => setTimeout(resolveTimer, 3_000));
    const idle3sRssMb = procStatusMb(pid, 'VmRSS');
    await new Promise((resolveTimer) => setTimeout(resolveTimer, 37_000));
    const sorted = [...latencies].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return {
      bursts,
      answered,
      quietWindowMs,
      latencyP50Ms: at(0.5),
      latencyP95Ms: at(0.95),
      overheadP50Ms: at(0.5) - quietWindowMs,
      overheadP95Ms: at(0.95) - quietWindowMs,
      rssAfterStartMb,
      idle3sRssMb,
      idle40sRssMb: procStatusMb(pid, 'VmRSS'),
      peakRssMb: procStatusMb(pid, 'VmHWM'),
    };
  } finally {
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    await server.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureTelegramUser(Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 500))));
}
