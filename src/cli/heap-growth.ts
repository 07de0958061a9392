import { setFlagsFromString } from 'node:v8';

const FLAG = '--heap-growing-percent';

/**
 * Caps how far V8 lets the old generation grow past what the last full collection left alive, for the server
 * process `palaver start` runs. V8's own heuristics let a fast-allocating server grow it up to 4×: under a crowd of
 * 10,000 conversations that held about 150 MB of garbage as resident memory. A fixed factor costs a few more full
 * collections (marked concurrently) for a flat memory line. The flag is read at every collection, so setting it
 * after start-up takes effect; one the process was started with (`node --heap-growing-percent=…`) wins.
 *
 * @returns whether the limit was applied.
 */
export function limitHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): boolean {
  if (percent <= 0 || execArgv.some((arg) => arg.startsWith(FLAG) || arg.startsWith('--heap_growing_percent'))) return false;
  setFlagsFromString(`${FLAG}=${Math.round(percent)}`);
  return true;
}
