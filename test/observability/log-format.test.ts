import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.js';
import { prettyLine } from '../../src/observability/pretty-lines.js';
import { cleanEnv, killAll, PALAVER_BIN, spawnNode } from '../cli/child-process.js';

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-log-format-'));
  dirs.push(dir);
  return dir;
}

/** A stream that collects what is written; `isTTY` makes it look like a terminal. */
function sink(isTTY: boolean): PassThrough & { text(): string } {
  const stream = Object.assign(new PassThrough(), isTTY ? { isTTY: true } : {});
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return Object.assign(stream, { text: () => text });
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('log lines', () => {
  it('are lines a person reads on a terminal, and JSON elsewhere or when json is asked for', async () => {
    const terminal = sink(true);
    createLogger({ destination: terminal, secrets: ['sk-live-0123456789'] }).warn({ channel: 'web', file: '/tmp/a b' }, 'used key sk-live-0123456789');
    const piped = sink(false);
    createLogger({ destination: piped }).warn({ channel: 'web' }, 'hello');
    const asked = sink(true);
    createLogger({ destination: asked, format: 'json' }).info('hello');
    await settled();
    expect(terminal.text()).toMatch(/^\d\d:\d\d:\d\d WARN {2}used key \[redacted\] {2}channel=web file="\/tmp\/a b"\n$/);
    expect(JSON.parse(piped.text())).toMatchObject({ level: 40, channel: 'web', msg: 'hello' });
    expect(JSON.parse(asked.text())).toMatchObject({ level: 30, msg: 'hello' });
  });

  it("show an error's message and its stack indented below", () => {
    const line = prettyLine(
      JSON.stringify({ level: 50, time: 0, msg: 'turn failed', err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' } }),
    );
    expect(line).toMatch(/ERROR turn failed {2}err="boom"\n {4}Error: boom\n {8}at x$/);
    expect(prettyLine('not json')).toBe('not json');
  });

  it('of palaver start are readable on a terminal (a real pseudo-terminal), JSON through a pipe', async () => {
    // `script` gives the child a terminal as stdout, as a person's shell does.
    const cwd = tempDir();
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(PALAVER_BIN)} start --demo --port 0`;
    const onTerminal = spawn('script', ['-qfec', command, '/dev/null'], { cwd, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let output = '';
    onTerminal.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line:\n${output}`)), 30_000);
        onTerminal.stdout.on('data', () => {
          if (output.includes('Palaver is listening')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
    } finally {
      process.kill(-onTerminal.pid!, 'SIGTERM');
    }
    expect(output).toMatch(/^\d\d:\d\d:\d\d WARN {2}generated a web cookie secret and saved it/m);
    expect(output).not.toContain('{"level"');

    const piped = spawnNode(PALAVER_BIN, ['start', '--demo', '--port', '0'], { cwd: tempDir(), env: cleanEnv() });
    await piped.waitForOutput(/Palaver is listening/, 30_000);
    expect(piped.stdout()).toMatch(/^\{"level":40,.*"msg":"generated a web cookie secret/m);
  });
});
