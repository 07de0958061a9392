/**
 * The turn's walk, measured as it runs: which of Palaver's own functions (files under `src/`) one Telegram text
 * message visits from the update to the sent reply. V8's precise coverage counts every function call; the counts are
 * reset after a warm-up message of the same person, then one message is sent and answered, and every function of
 * `src/` that ran in between is listed, grouped by file, in source order. Background work that runs during the
 * message (the bot's long poll, timers) is counted too, and is named as such in the output's `background` list.
 *
 * Usage: node --import tsx bench/turn-walk.ts [--list]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createPalaver } from '../src/app.js';
import { createLogger, silentLogger } from '../src/observability/logger.js';
import { startFakeTelegram, startScriptedModelServer, textScript } from '../src/testing/index.js';

const SOURCE_ROOT = pathToFileURL(fileURLToPath(new URL('../src/', import.meta.url))).href;
const OUTSIDE = ['testing/', 'models/scripted/'];
const listAll = process.argv.includes('--list');

interface Visited {
  readonly file: string;
  readonly fn: string;
  readonly calls: number;
}

/** Functions of `src/` that ran since the last take (precise coverage with call counts resets on every take). */
async function takeVisited(session: Session): Promise<Visited[]> {
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const visited: Visited[] = [];
  for (const script of result) {
    if (!script.url.startsWith(SOURCE_ROOT)) continue;
    const file = script.url.slice(SOURCE_ROOT.length);
    // The fake Telegram server and the scripted model run in this process too; they are the outside world.
    if (OUTSIDE.some((prefix) => file.startsWith(prefix))) continue;
    for (const fn of script.functions) {
      // The first range of a function is its whole body; its count is how often it was called.
      const calls = fn.ranges[0]?.count ?? 0;
      // The module's own top level (an empty name covering the file) ran at import, not in the turn.
      if (calls === 0 || (fn.functionName === '' && fn.ranges[0]?.startOffset === 0)) continue;
      visited.push({ file, fn: fn.functionName || `(anonymous @${fn.ranges[0]?.startOffset})`, calls });
    }
  }
  return visited;
}

const dir = mkdtempSync(join(tmpdir(), 'palaver-walk-'));
mkdirSync(join(dir, 'instructions'));
writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a walking agent. Reply briefly.');
const model = await startScriptedModelServer({ script: textScript('Here you are.') });
const telegram = await startFakeTelegram();
const palaver = await createPalaver(
  {
    model: { name: 'scripted', baseUrl: model.baseUrl, apiKey: 'walk-key', maxRetries: 0, prices: { scripted: { input: '0.40', output: '1.60' } } },
    database: { url: `sqlite:${join(dir, 'palaver.db')}` },
    agent: { instructionsDir: join(dir, 'instructions') },
    channels: { web: { enabled: false }, telegram: { token: telegram.token, apiRoot: telegram.apiRoot, quietWindowMs: 0, drafts: false } },
  },
  { logger: process.argv.includes('--log') ? createLogger({ level: 'warn' }) : silentLogger() },
);
const session = new Session();
session.connect();
try {
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  // Warm-up: the person's first message creates the user and the session; the measured one is an ordinary turn.
  telegram.sendText({ chatId: 4242, text: 'hello' });
  await telegram.waitForMessages(1, { chatId: 4242 });
  // Let the warm-up's tail (delivery bookkeeping, the next long poll) finish before the counts are reset.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await takeVisited(session);

  telegram.sendText({ chatId: 4242, text: 'and again' });
  await telegram.waitForMessages(2, { chatId: 4242 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const visited = await takeVisited(session);
  console.error(telegram.sentTo(4242).map((m) => m.text));

  // Background: what an idle bot runs as well (its long poll, timers), measured over an idle window of the same length.
  const idleStart = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 600));
  const idle = new Set((await takeVisited(session)).map((v) => `${v.file}:${v.fn}`));
  const idleMs = Date.now() - idleStart;

  const turn = visited.filter((v) => !idle.has(`${v.file}:${v.fn}`));
  const files = new Set(turn.map((v) => v.file));
  console.log(
    JSON.stringify(
      {
        functions: turn.length,
        files: files.size,
        calls: turn.reduce((sum, v) => sum + v.calls, 0),
        background: { functions: visited.length - turn.length, idleWindowMs: idleMs },
      },
      null,
      2,
    ),
  );
  if (listAll) {
    let last = '';
    for (const v of turn) {
      if (v.file !== last) console.log(`\n${v.file}`);
      last = v.file;
      console.log(`  ${v.fn}${v.calls > 1 ? ` ×${v.calls}` : ''}`);
    }
  }
} finally {
  session.disconnect();
  await palaver.close();
  await telegram.close();
  await model.close();
  rmSync(dir, { recursive: true, force: true });
}
