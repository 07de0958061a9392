// Child process for idle-memory.test.ts: a busy second (short-lived objects, a large set kept and then dropped),
// then silence. With `hint` the process runs releaseMemoryWhenIdle as `palaver start` does. Prints the V8 heap's
// committed size once a second as `heap <ms since idle> <MB>`.
import { releaseMemoryWhenIdle } from '../../src/cli/idle-memory.js';

let kept: { i: number; text: string }[] = [];
const busyUntil = Date.now() + 1500;
while (Date.now() < busyUntil) {
  for (let i = 0; i < 2000; i += 1) kept.push({ i, text: `message ${i} ${Math.random()}` });
  if (kept.length > 400_000) kept = kept.slice(200_000);
  await new Promise((resolve) => setImmediate(resolve));
}
kept = [];
if (process.argv[2] === 'hint') releaseMemoryWhenIdle({ intervalMs: 500 });
const idleSince = Date.now();
const report = (): void => console.log(`heap ${Date.now() - idleSince} ${(process.memoryUsage().heapTotal / 1e6).toFixed(1)}`);
report();
const timer = setInterval(report, 1000);
setTimeout(() => clearInterval(timer), 25_000);
