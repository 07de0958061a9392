import { fileURLToPath } from 'node:url';
import { cleanEnv, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';

const CHILD = fileURLToPath(new URL('./palaver-child.ts', import.meta.url));

/**
 * A crash-test Palaver process (palaver-child.ts) with its modules loaded and Palaver not started yet: loading
 * takes seconds on a loaded machine, so a test loads a successor while its predecessor still runs, and starts it
 * once the predecessor is killed (one Palaver at a time, as a supervisor restarts it).
 */
export function loadChild(config: string): Promise<RunningChild> {
  const child = spawnNode(CHILD, [config, '--standby'], { cwd: REPO_ROOT, env: cleanEnv() });
  const loaded = child.waitForOutput(/^loaded$/m, 30_000).then(() => child);
  loaded.catch(() => {}); // awaited in startChild; this only keeps a failure meanwhile from counting as unhandled
  return loaded;
}

/** Starts Palaver in a loaded child; resolves once it serves. */
export async function startChild(standby: Promise<RunningChild>, timeoutMs = 30_000): Promise<RunningChild> {
  const child = await standby;
  child.process.stdin.write('start\n');
  await child.waitForOutput(/^ready$/m, timeoutMs);
  return child;
}
