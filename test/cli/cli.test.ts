import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseSse } from '../server/sse.js';
import { cleanEnv, killAll, PALAVER_BIN, spawnNode, typeLines, type RunningChild } from './child-process.js';

// Each test runs the real CLI in its own process and temp folder (./data/palaver.db lands there), with no PALAVER_*
// variables from the developer's shell.
// Starting the CLI takes seconds on a busy machine; the restart test starts it twice.
vi.setConfig({ testTimeout: 60_000 });
const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempCwd(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-cli-'));
  dirs.push(dir);
  return dir;
}

function palaver(args: readonly string[], cwd: string, env: Record<string, string> = {}): RunningChild {
  return spawnNode(PALAVER_BIN, args, { cwd, env: cleanEnv(env) });
}

async function startDemoServer(cwd: string): Promise<{ child: RunningChild; url: string }> {
  const child = palaver(['start', '--demo', '--port', '0'], cwd);
  const match = await child.waitForOutput(/Palaver is listening on (http:\/\/[^\s]+)/);
  return { child, url: match[1]! };
}

/** Posts one AG-UI run and reads the whole SSE stream. */
async function runAgui(url: string, text: string, threadId = 'cli-thread') {
  const response = await fetch(`${url}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId: `run-${Math.random().toString(36).slice(2)}`,
      messages: [{ id: `u-${Date.now()}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  const events = parseSse(await response.text());
  const reply = events
    .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
    .map((event) => event['delta'])
    .join('');
  return { events, types: events.map((event) => event.type), reply };
}

describe('palaver start --demo', () => {
  it('serves AG-UI, health, metrics and the chat page, stops on SIGTERM, and keeps notes across a restart', async () => {
    const cwd = tempCwd();
    const first = await startDemoServer(cwd);
    expect(first.child.stdout()).toContain('replies come from a scripted model');

    const time = await runAgui(first.url, 'what time is it?');
    expect(time.types[0]).toBe('RUN_STARTED');
    expect(time.types.at(-1)).toBe('RUN_FINISHED');
    // Without showToolDetails the page learns the tool's label for people, not its name.
    const toolStart = time.events.findIndex((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.tool_progress');
    expect(time.events[toolStart]).toMatchObject({ value: { status: 'running', label: 'Checking the time…' } });
    expect(JSON.stringify(time.events)).not.toContain('current_time');
    expect(time.types.indexOf('TEXT_MESSAGE_CONTENT')).toBeGreaterThan(toolStart);
    expect(time.reply).toMatch(/^It is .+ where you are\.$/);

    const health = await fetch(`${first.url}/health`);
    expect(health.status).toBe(200);
    const metrics = await fetch(`${first.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('palaver_turns_total');
    const page = await fetch(`${first.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/<html/i);

    const saved = await runAgui(first.url, 'remember: buy milk');
    expect(saved.reply).toContain('buy milk');
    // The banner's own example must save "buy milk", not ": buy milk".
    expect(saved.reply).toBe('Saved your note: buy milk');

    expect(await first.child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(first.child.stdout()).toContain('Shutting down');

    const second = await startDemoServer(cwd);
    const listed = await runAgui(second.url, 'list my notes');
    expect(listed.reply).toContain('buy milk');
    expect(await second.child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('exits non-zero and names the field when the config file is invalid', async () => {
    const cwd = tempCwd();
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ model: { name: 'x', baseUrl: 'nope' } }));
    const child = palaver(['start', '--port', '0'], cwd);
    const exit = await child.waitForExit();
    expect(exit.code).not.toBe(0);
    expect(child.stdout() + child.stderr()).toContain('model.baseUrl');
  });
});

describe('palaver start with a model that needs a key it does not have', () => {
  it('refuses to start, naming model.apiKey and PALAVER_LLM_API_KEY, and never calls the model', async () => {
    const cwd = tempCwd();
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ model: { name: 'gpt-4.1-mini', baseUrl: 'https://api.openai.com/v1' } }));
    const child = palaver(['start', '--port', '0'], cwd);
    expect(await child.waitForExit()).toEqual({ code: 1, signal: null });
    expect(child.stderr()).toContain('model.apiKey is not set, and https://api.openai.com/v1 needs a key: put it in PALAVER_LLM_API_KEY');
    expect(child.stdout()).not.toContain('Palaver is listening');
  });
});

describe('palaver start --demo in a project with a config', () => {
  it("keeps the configured agent.name (the demo's name only where none is set)", async () => {
    const cwd = tempCwd();
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ agent: { name: 'Front desk' } }));
    const { child, url } = await startDemoServer(cwd);
    expect(await (await fetch(url)).text()).toContain('<title>Front desk</title>');
    expect(await child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});

describe('palaver start on a busy port', () => {
  it('exits 1 and names --port instead of running on without a server', async () => {
    const cwd = tempCwd();
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = busy.address() as AddressInfo;
      const child = palaver(['start', '--demo', '--port', String(port)], cwd);
      expect(await child.waitForExit()).toEqual({ code: 1, signal: null });
      expect(child.stderr()).toContain(`Cannot listen on 127.0.0.1:${port} (EADDRINUSE)`);
      expect(child.stderr()).toContain(`--port <port> (now ${port})`);
      expect(child.stdout()).not.toContain('Palaver is listening');
    } finally {
      busy.close();
    }
  });
});

describe('palaver --version', () => {
  it('prints the version of the installed package', async () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const child = palaver(['--version'], tempCwd());
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout().trim()).toBe(manifest.version);
  });
});

describe('palaver without a config', () => {
  it('start says how to create a config or use --demo, and exits 1', async () => {
    const cwd = tempCwd();
    const child = palaver(['start', '--port', '0'], cwd);
    expect(await child.waitForExit()).toEqual({ code: 1, signal: null });
    const err = child.stderr();
    expect(err).toContain(`No Palaver config found in ${cwd}`);
    expect(err).toContain('Create palaver.config.json there, for example:');
    expect(err).toContain('"model": { "name": "gpt-4.1-mini", "baseUrl": "https://api.openai.com/v1" }');
    expect(err).toContain('PALAVER_MODEL=');
    expect(err).toContain('--demo');
    expect(err).not.toContain('expected object');
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  });

  it('doctor says the same under its config check, and exits 1', async () => {
    const cwd = tempCwd();
    const child = palaver(['doctor'], cwd);
    expect(await child.waitForExit()).toEqual({ code: 1, signal: null });
    expect(child.stdout()).toMatch(/^✘ config: No Palaver config found in /m);
    expect(child.stdout()).toContain('Create palaver.config.json there');
    expect(child.stdout()).toContain('--demo');
  });

  it('names an unknown key in the config file and the key it likely means', async () => {
    const cwd = tempCwd();
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ model: { name: 'x' }, agent: { historyLimt: 5 } }));
    const child = palaver(['start', '--port', '0'], cwd);
    expect((await child.waitForExit()).code).toBe(1);
    expect(child.stderr()).toContain('Unknown key "historyLimt" in agent; did you mean "historyLimit"?');
  });
});

describe('palaver chat --demo', () => {
  it('answers each line from stdin, shows the tool results, and exits 0 on /exit', async () => {
    const cwd = tempCwd();
    const child = palaver(['chat', '--demo', '--tool-details'], cwd);
    typeLines(child, ['remember: call mom', 'list my notes', '/exit']);
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    expect(out).toContain('scripted model');
    expect(out).toMatch(/save_note → Saved note #1: .*call mom/);
    expect(out).toMatch(/bot> Your notes: 1\. .*call mom/);
    expect(out).toContain('bot> Saved your note: call mom\n');
    expect(out).toContain('bot> Your notes: 1. call mom\n');
  });
});

describe('palaver chat: the terminal holds only the conversation', () => {
  it('prints its banner first, answers /help itself, and writes every log line to data/chat.log', async () => {
    const cwd = tempCwd();
    const child = palaver(['chat', '--demo'], cwd);
    typeLines(child, ['/help', 'remember: water the plants', '/exit']);
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    // The demo's banner is the first thing on screen: no log line before it, none anywhere after.
    expect(out.trimStart().startsWith('{')).toBe(false);
    expect(out.split('\n').filter((line) => line.trimStart().startsWith('{"level"'))).toEqual([]);
    expect(child.stderr()).toBe('');
    expect(out).toContain(`Logs: ${join(cwd, 'data', 'chat.log')}`);
    expect(out).toContain('/help         this list');
    expect(out).toContain('/exit, /quit  end the chat');
    expect(out).toContain('/reset  start the conversation afresh');
    expect(out).toContain('bot> Saved your note: water the plants\n');
    // /help never reached the agent: one turn, for the note.
    const log = readFileSync(join(cwd, 'data', 'chat.log'), 'utf8');
    expect(log.split('\n').filter((line) => line.includes('"msg":"turn finished"'))).toHaveLength(1);
  });
});

describe('palaver chat --demo salon', () => {
  it('runs the salon booking agent on its own SQLite file: cancels the haircut it was shown once the person says yes, then has nothing booked', async () => {
    const cwd = tempCwd();
    const child = palaver(['chat', '--demo', 'salon'], cwd);
    typeLines(child, ['show my appointments', 'cancel the haircut', 'y', 'cancel the manicure', 'yes', 'show my appointments', '/exit']);
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    expect(out).toContain('SALON DEMO');
    expect(out).toMatch(/bot> Your appointments:\n• Haircut with Anna, .*\n• Manicure with Olga/);
    // Each cancellation is asked first, naming the appointment, and answered at the [y/n] prompt.
    expect(out).toMatch(/Cancel your Haircut with Anna on .*\n\[y\/n\] you> /);
    expect(out).toMatch(/bot> Appointment \d+ is cancelled\.\n[\s\S]*bot> Appointment \d+ is cancelled\./);
    expect(out).toContain('bot> You have nothing booked right now.');
    expect(out).not.toMatch(/id \d+:/);
    expect(existsSync(join(cwd, 'data', 'salon.db'))).toBe(true);
  });

  it('refuses an unknown demo agent', async () => {
    const child = palaver(['chat', '--demo', 'bakery'], tempCwd());
    expect((await child.waitForExit()).code).not.toBe(0);
    expect(child.stderr()).toContain('Allowed choices are notes, salon');
  });
});

describe('palaver chat tool display', () => {
  it('shows the tool’s label by default, not its name or result', async () => {
    const child = palaver(['chat', '--demo'], tempCwd());
    typeLines(child, ['remember: secret plan', '/exit']);
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain('· Saving your note… ✓');
    expect(child.stdout()).not.toContain('save_note');
    expect(child.stdout()).not.toContain('Saved note #1');
  });
});

describe('palaver doctor', () => {
  it('passes every check in demo mode', async () => {
    const child = palaver(['doctor', '--demo'], tempCwd());
    const exit = await child.waitForExit();
    const out = child.stdout();
    expect(out).toMatch(/^✔ config: /m);
    expect(out).toMatch(/^✔ database: /m);
    expect(out).toMatch(/^✔ model: /m);
    expect(out).toMatch(/^✔ agent: /m);
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('exits 1 and says the model endpoint cannot be reached', async () => {
    const child = palaver(['doctor'], tempCwd(), { PALAVER_MODEL: 'x', PALAVER_LLM_BASE_URL: 'http://127.0.0.1:9/v1' });
    const exit = await child.waitForExit();
    expect(child.stdout()).toMatch(/^✘ model: cannot reach http:\/\/127\.0\.0\.1:9\/v1 .*PALAVER_LLM_BASE_URL/m);
    expect(exit.code).toBe(1);
  });
});

describe('palaver migrate', () => {
  it('creates the SQLite database under ./data of the working folder', async () => {
    const cwd = tempCwd();
    const child = palaver(['migrate'], cwd, { PALAVER_MODEL: 'x' });
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain(`Database is up to date: sqlite:${join(cwd, 'data', 'palaver.db')}`);
    expect(existsSync(join(cwd, 'data', 'palaver.db'))).toBe(true);
  });
});

describe('paths and demo mode', () => {
  it('resolves the instructions folder and the SQLite file against the config file folder', async () => {
    const cwd = tempCwd();
    const agentDir = join(cwd, 'agent');
    mkdirSync(join(agentDir, 'instructions'), { recursive: true });
    writeFileSync(join(agentDir, 'instructions', 'base.md'), 'You are a test agent.');
    writeFileSync(
      join(agentDir, 'palaver.config.yaml'),
      'model:\n  name: x\nagent:\n  instructionsDir: instructions\ndatabase:\n  url: sqlite:./data/agent.db\n',
    );
    const child = palaver(['migrate', '--config', 'agent/palaver.config.yaml'], cwd);
    expect((await child.waitForExit()).code).toBe(0);
    expect(existsSync(join(agentDir, 'data', 'agent.db'))).toBe(true);
    expect(existsSync(join(cwd, 'data'))).toBe(false);
  });

  it('takes a plain file path in PALAVER_DB as a SQLite file in the working folder', async () => {
    const cwd = tempCwd();
    const child = palaver(['migrate'], cwd, { PALAVER_MODEL: 'x', PALAVER_DB: 'state/agent.sqlite' });
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout()).toContain(`Database is up to date: sqlite:${join(cwd, 'state', 'agent.sqlite')}`);
    expect(existsSync(join(cwd, 'state', 'agent.sqlite'))).toBe(true);
  });

  it('checks the real model the environment names, even with --demo', async () => {
    const child = palaver(['doctor', '--demo'], tempCwd(), { PALAVER_LLM_BASE_URL: 'http://127.0.0.1:9/v1', PALAVER_MODEL: 'real-model' });
    await child.waitForExit();
    expect(child.stdout()).toMatch(/^✘ model: cannot reach http:\/\/127\.0\.0\.1:9\/v1/m);
  });
});
