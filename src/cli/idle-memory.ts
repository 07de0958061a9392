import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

const FLAG = 'optimize-for-size';

/**
 * Gives memory back once the server has gone quiet, for the server process `palaver start` runs.
 *
 * V8 shrinks an idle heap with its "memory reducer", but only when it judges the allocation rate low, and after a
 * burst it does not for a long time: Node 20 and 22 average the rate over the last ten young-generation collections,
 * which at idle come seldom (Node 20 still judged "high" 90 s into idleness after 100 Telegram chats, Node 22 "low"
 * after ~45 s), and Node 24 counts the zero allocation rate of the C++ heap Node attaches as high, so its reducer
 * never runs at idle. Nothing short of a V8 flag changes that (a small young generation, `--max-semi-space-size`, has
 * to be given at start-up and helps on Node 20 and 22 only), so this one stays, toggled rather than set: while the
 * event loop has been nearly idle for a whole interval this sets V8's `--optimize-for-size`, which makes the memory
 * reducer run at its next check (within 8 s); the first sign of work clears it again, so busy periods keep V8's
 * defaults. Node keeps flags writable after start-up (`--no-freeze-flags-after-init` is its default). A flag the
 * process was started with is left alone. What runs at idle allocates little (the heartbeat ~15 KB a beat, see
 * `store/kysely/leases.ts`), so the heap stays small once reduced.
 *
 * @returns a function that stops watching (and clears the flag), or undefined when it was not started.
 */
export function releaseMemoryWhenIdle(options: { intervalMs?: number; idleUtilization?: number; execArgv?: readonly string[] } = {}): (() => void) | undefined {
  const { intervalMs = 5_000, idleUtilization = 0.01, execArgv = process.execArgv } = options;
  if (execArgv.some((arg) => arg.includes('optimize-for-size') || arg.includes('optimize_for_size'))) return undefined;
  let last = performance.eventLoopUtilization();
  let favouringMemory = false;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const idle = performance.eventLoopUtilization(now, last).utilization < idleUtilization;
    last = now;
    if (idle !== favouringMemory) {
      setFlagsFromString(idle ? `--${FLAG}` : `--no-${FLAG}`);
      favouringMemory = idle;
    }
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    if (favouringMemory) setFlagsFromString(`--no-${FLAG}`);
  };
}
