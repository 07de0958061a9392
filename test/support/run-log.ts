import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { inject } from 'vitest';
import { MIN_SECRET_LENGTH } from '../../src/observability/logger.js';

/**
 * The run-wide log: every test's Palaver log lines (the harness's, the CLI children's output, the logger unit tests')
 * are appended here, and `test/support/run-log-check.ts` (vitest `globalSetup`) fails the run when any line holds a
 * known secret. One file per worker process and thread, so writers never share a file.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    /** Folder of the run-wide log, made by the global setup. */
    palaverRunLogDir: string;
  }
}

function runLogDir(): string | undefined {
  try {
    return inject('palaverRunLogDir');
  } catch {
    return undefined; // not under vitest (e.g. a script reusing the harness): nothing to record
  }
}

function fileIn(kind: 'logs' | 'secrets'): string | undefined {
  const dir = runLogDir();
  if (!dir) return undefined;
  return join(dir, kind, `${process.pid}-${threadId}.txt`);
}

/** Adds raw log text (one or more lines, as written) to the run-wide log. */
export function recordRunLog(text: string): void {
  const file = fileIn('logs');
  if (file && text) appendFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}

/** Adds secrets a test configured (e.g. `secretsOf(config)`) to those the run-wide check looks for. */
export function registerRunSecrets(secrets: Iterable<string>): void {
  const file = fileIn('secrets');
  const usable = [...secrets].filter((secret) => secret.length >= MIN_SECRET_LENGTH && !secret.includes('\n'));
  if (file && usable.length > 0) appendFileSync(file, `${usable.join('\n')}\n`);
}

/** Makes the folders the writers expect; called by the global setup. */
export function prepareRunLog(dir: string): void {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  mkdirSync(join(dir, 'secrets'), { recursive: true });
}

export interface RunLogLeak {
  readonly file: string;
  readonly line: number;
  /** The offending line with every secret replaced by `<secret NAME>`, so the report does not repeat the leak. */
  readonly text: string;
  /** Names of the secrets found: a key of the fixed secrets, or `registered #n`. */
  readonly secrets: readonly string[];
}

export interface RunLogReport {
  readonly files: number;
  readonly lines: number;
  readonly secrets: number;
  readonly leaks: readonly RunLogLeak[];
}

/** Searches every line of the run-wide log in `dir` for the fixed (named) secrets and those the tests registered. */
export function checkRunLog(dir: string, fixedSecrets: Readonly<Record<string, string>>): RunLogReport {
  const names = new Map<string, string>();
  for (const [name, secret] of Object.entries(fixedSecrets)) names.set(secret, name);
  for (const name of readdirSync(join(dir, 'secrets'))) {
    for (const secret of readFileSync(join(dir, 'secrets', name), 'utf8').split('\n')) if (!names.has(secret)) names.set(secret, `registered #${names.size}`);
  }
  const secrets = [...names.keys()].filter((secret) => secret.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  const files = readdirSync(join(dir, 'logs'));
  const leaks: RunLogLeak[] = [];
  let lines = 0;
  for (const name of files) {
    readFileSync(join(dir, 'logs', name), 'utf8')
      .split('\n')
      .forEach((text, index) => {
        if (!text) return;
        lines += 1;
        const found = secrets.filter((secret) => text.includes(secret));
        if (found.length === 0) return;
        let masked = text;
        for (const secret of found) masked = masked.split(secret).join(`<secret ${names.get(secret)}>`);
        leaks.push({ file: name, line: index + 1, text: masked, secrets: found.map((secret) => names.get(secret) ?? '?') });
      });
  }
  return { files: files.length, lines, secrets: secrets.length, leaks };
}
