import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnTs, type RunningChild } from './child-process.js';

const CHILD = 'test/cli/idle-memory-child.ts';

interface HeapReport {
  /** Milliseconds since the child went quiet. */
  readonly at: number;
  /** The V8 heap's committed size, MB. */
  readonly mb: number;
}

function heapReports(child: RunningChild): HeapReport[] {
  return [...child.stdout().matchAll(/^heap (\d+) ([\d.]+)$/gm)].map((match) => ({ at: Number(match[1]), mb: Number(match[2]) }));
}

/** Resolves with the first report of `child` that satisfies `test`, as the reports arrive. */
async function firstReport(child: RunningChild, test: (report: HeapReport) => boolean, timeoutMs: number): Promise<HeapReport> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = heapReports(child).find(test);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such heap report within ${timeoutMs} ms:\n${child.stdout()}${child.stderr()}`);
    await new Promise<void>((resolve) => child.process.stdout.once('data', () => resolve()));
  }
}

describe('idle memory of the server process', () => {
  const children: RunningChild[] = [];
  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop('SIGKILL').catch(() => undefined)));
  });

  it('gives the heap grown under load back within seconds of going quiet, where V8 alone keeps it', async () => {
    const hinted = spawnTs(CHILD, ['hint'], { cwd: REPO_ROOT });
    const alone = spawnTs(CHILD, ['none'], { cwd: REPO_ROOT });
    children.push(hinted, alone);
    const busy = await firstReport(hinted, () => true, 20_000);
    expect(busy.mb).toBeGreaterThan(60);

    // V8's memory reducer looks every 8 s; the look after the hint's first quiet interval shrinks the heap.
    const shrunk = await firstReport(hinted, (report) => report.mb < busy.mb / 3, 20_000);
    // The same process without the hint holds more by then. V8 alone keeps most of it as a rule, but its memory
    // reducer sometimes gives part back on its own (a CI run on Node 24 saw 234 → 141 MB), so the control is held to
    // "more than the hinted process", not to its peak.
    const aloneThen = await firstReport(alone, (report) => report.at >= shrunk.at, 20_000);
    expect(aloneThen.mb).toBeGreaterThan(shrunk.mb * 1.5);
  }, 45_000);
});
