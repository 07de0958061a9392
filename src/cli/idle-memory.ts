import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';

const FLAG = 'optimize-for-size';

/**
 * Gives memory back once the server has gone quiet, for the server process `palaver start` runs.
 *
 * V8 shrinks an idle heap with its "memory reducer", but only when its estimate of the allocation rate is low, and
 * that estimate averages over the last garbage collections: after a busy minute it stays "high" for a minute or two
 * of complete silence, and the process keeps the heap it grew under load (about 40 MB more on the demo after 100
 * conversations). While the event loop has been nearly idle for a whole interval this sets V8's
 * `--optimize-for-size`, which makes the memory reducer run at its next check (within 8 s); the first sign of work
 * clears it again, so busy periods keep V8's defaults. A flag the process was started with is left alone.
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
