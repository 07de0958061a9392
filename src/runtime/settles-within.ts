/**
 * Waits for `work` at most `ms`: true when it settled (resolved or rejected) in time, false when the time ran out
 * first. `work` itself goes on either way; this only stops waiting for it (a shutdown's grace period).
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
