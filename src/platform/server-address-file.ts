import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in Palaver's data folder that says where the running `palaver start` listens. */
const FILE = 'server.json';

/**
 * Records where this process's server listens (`url`, `pid`), so `palaver admin` on this machine finds it whatever
 * `--port` it was started with. Returns a function that removes the record again, if it is still this process's.
 */
export function recordServerAddress(dataFolder: string, url: string): () => void {
  const file = join(dataFolder, FILE);
  mkdirSync(dataFolder, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ url, pid: process.pid })}\n`);
  return () => {
    if (readRecord(file)?.pid === process.pid) rmSync(file, { force: true });
  };
}

/** The URL a running `palaver start` recorded in `dataFolder`, or undefined when none is recorded or its process is gone. */
export function runningServerUrl(dataFolder: string): string | undefined {
  const record = readRecord(join(dataFolder, FILE));
  return record !== undefined && isAlive(record.pid) ? record.url : undefined;
}

function readRecord(file: string): { url: string; pid: number } | undefined {
  try {
    const { url, pid } = JSON.parse(readFileSync(file, 'utf8')) as { url?: unknown; pid?: unknown };
    return typeof url === 'string' && Number.isInteger(pid) ? { url, pid: pid as number } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
