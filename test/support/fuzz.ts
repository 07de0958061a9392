import fc from 'fast-check';

/**
 * Property runs that say how to replay them. Each run prints its seed; a failing run throws fast-check's report
 * (the shrunk counterexample) followed by the command that replays exactly that case:
 *
 *   PALAVER_FUZZ_SEED=<seed> PALAVER_FUZZ_PATH=<path> npx vitest run <test file>
 *
 * Without PALAVER_FUZZ_SEED every run draws a new seed, so the suite explores further each time it runs.
 */
export function fuzzParameters<Ts>(name: string, parameters: fc.Parameters<Ts> = {}): fc.Parameters<Ts> {
  const given = process.env.PALAVER_FUZZ_SEED;
  const seed = given === undefined || given === '' ? Math.floor(Math.random() * 2 ** 31) : Number(given);
  if (!Number.isInteger(seed)) throw new Error(`PALAVER_FUZZ_SEED must be an integer, not ${JSON.stringify(given)}.`);
  const path = process.env.PALAVER_FUZZ_PATH;
  console.info(`fuzz "${name}": seed ${seed}${path ? `, path ${path}` : ''} (replay with PALAVER_FUZZ_SEED=${seed})`);
  return { ...parameters, seed, ...(path ? { path, endOnFailure: true } : {}) };
}

/** The error the shrunk counterexample raised (fast-check's report leaves it out unless verbose). */
function failure(details: { readonly errorInstance: unknown }): string {
  const error = details.errorInstance;
  return `\n\nFailed with: ${error instanceof Error ? error.message : String(error)}`;
}

/** A single case is being replayed (PALAVER_FUZZ_PATH): checks over the whole run's coverage do not apply. */
export const replaying = Boolean(process.env.PALAVER_FUZZ_PATH);

function replayHint(details: { readonly seed: number; readonly counterexamplePath: string | null }): string {
  return `\n\nReplay this case: PALAVER_FUZZ_SEED=${details.seed} PALAVER_FUZZ_PATH=${details.counterexamplePath ?? ''} npx vitest run <this test file>`;
}

/** `fc.assert` for a synchronous property, with the seed printed and the replay command in the failure. */
export function fuzz<Ts extends [unknown, ...unknown[]]>(name: string, property: fc.IProperty<Ts>, parameters: fc.Parameters<Ts> = {}): void {
  const details = fc.check(property, fuzzParameters(name, parameters));
  if (details.failed) throw new Error(`${fc.defaultReportMessage(details)}${failure(details)}${replayHint(details)}`, { cause: details.errorInstance });
}

/** `fc.assert` for an asynchronous property, with the seed printed and the replay command in the failure. */
export async function fuzzAsync<Ts extends [unknown, ...unknown[]]>(
  name: string,
  property: fc.IAsyncProperty<Ts>,
  parameters: fc.Parameters<Ts> = {},
): Promise<void> {
  const details = await fc.check(property, fuzzParameters(name, parameters));
  if (details.failed)
    throw new Error(`${await fc.asyncDefaultReportMessage(details)}${failure(details)}${replayHint(details)}`, { cause: details.errorInstance });
}
