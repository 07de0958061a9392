/**
 * Memory of `palaver start --demo` with the Telegram channel on (a local fake Bot API server, here in the parent):
 * 100 private chats each send a message and get their reply; then the resident set after 3 s and after 40 s of
 * idleness (V8 gives memory back to the system only after a while without work).
 *
 * By hand: node --import tsx bench/telegram-idle.ts [conversations=100]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeTelegram } from '../src/testing/index.js';
import { procStatusMb } from './start-demo.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface TelegramIdleResult {
  readonly conversations: number;
  readonly answered: number;
  readonly rssAfterStartMb: number;
  readonly idle3sRssMb: number;
  readonly idle40sRssMb: number;
  /** Of the 40 s figure: memory the process allocated (heap, malloc) and pages of files it mapped (node's binary, ICU data). */
  readonly idle40sAnonMb: number;
  readonly idle40sFileMb: number;
  readonly peakRssMb: number;
}

export async function measureTelegramIdle(conversations = 100): Promise<TelegramIdleResult> {
  const telegram = await startFakeTelegram();
  const cwd = mkdtempSync(join(tmpdir(), 'palaver-bench-telegram-'));
  const env: NodeJS.ProcessEnv = { ...process.env, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot };
  for (const name of Object.keys(env)) if (name.startsWith('PALAVER_') || name === 'NODE_OPTIONS') delete env[name];
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'palaver.js'), 'start', '--demo', '--port', '0'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await new Promise<void>((resolveReady, reject) => {
      let stdout = '';
      child.stdout.on('data', (data: Buffer) => {
        stdout += data.toString();
        if (/listening on/.test(stdout)) resolveReady();
      });
      child.once('exit', (code) => reject(new Error(`palaver start exited (${code}) before listening`)));
    });
    const rssAfterStartMb = procStatusMb(child.pid!, 'VmRSS');
    for (let i = 0; i < conversations; i += 1) telegram.sendText({ chatId: 10_000 + i, text: 'what time is it?' });
    await telegram.waitForMessages(conversations, { timeoutMs: 120_000 });
    const answered = new Set(telegram.sent.map((message) => message.chatId)).size;
    await new Promise((resolveTimer) => setTimeout(resolveTimer, 3_000));
    const idle3sRssMb = procStatusMb(child.pid!, 'VmRSS');
    await new Promise((resolveTimer) => setTimeout(resolveTimer, 37_000));
    const pid = child.pid!;
    return {
      conversations,
      answered,
      rssAfterStartMb,
      idle3sRssMb,
      idle40sRssMb: procStatusMb(pid, 'VmRSS'),
      idle40sAnonMb: procStatusMb(pid, 'RssAnon'),
      idle40sFileMb: procStatusMb(pid, 'RssFile'),
      peakRssMb: procStatusMb(pid, 'VmHWM'),
    };
  } finally {
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    await telegram.close();
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await measureTelegramIdle(Number(process.argv[2] ?? 100))));
}
