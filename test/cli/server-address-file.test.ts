import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { recordServerAddress, runningServerUrl } from '../../src/platform/server-address-file.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the running server's recorded address", () => {
  it('is found while its process runs, forgotten when it stops, and ignored when its process is gone', () => {
    const data = mkdtempSync(join(tmpdir(), 'palaver-address-'));
    dirs.push(data);
    const forget = recordServerAddress(data, 'http://127.0.0.1:4321');
    expect(runningServerUrl(data)).toBe('http://127.0.0.1:4321');
    forget();
    expect(runningServerUrl(data)).toBeUndefined();
    // A process that ended without forgetting (killed): its pid no longer runs.
    const gone = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    writeFileSync(join(data, 'server.json'), JSON.stringify({ url: 'http://127.0.0.1:4321', pid: Number(gone.stdout) }));
    expect(runningServerUrl(data)).toBeUndefined();
  });
});
