import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { logisticsScript, parseShipment } from '../../examples/logistics/scripted-model.js';
import type { ScriptedCall } from '../../src/testing/index.js';
import { killAll, REPO_ROOT, spawnNode, typeLines } from '../cli/child-process.js';
import { parseSse } from '../server/sse.js';

const RUN = join(REPO_ROOT, 'examples', 'logistics', 'run.ts');
vi.setConfig({ testTimeout: 60_000 });
/**
 * How long the example's process may take to start, or to end a chat of a few lines: it runs from source through
 * tsx with its MCP server, and with two suites on a 2-core machine a chat took more than 15 s (it was still
 * answering). A bound, not a timing.
 */
const CHILD_BOUND_MS = 50_000;

const dirs: string[] = [];
afterEach(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-logistics-'));
  dirs.push(dir);
  return dir;
}

describe('examples/logistics/run.ts', () => {
  it('chats in the terminal: sets the client role, adds a cargo and lists it', async () => {
    const child = spawnNode(RUN, ['chat', '--mcp-port', '0', '--data', dataDir()], { cwd: REPO_ROOT });
    typeLines(child, ["I'm a client", 'ship 200 kg from Kyiv to Lviv', 'show my cargo', '/exit']);
    expect(await child.waitForExit(CHILD_BOUND_MS)).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    expect(out).toContain('SCRIPTED MODEL');
    expect(out).toContain('set_role → Role set to client');
    expect(out).toContain('bot> You are set up as a client.');
    expect(out).toMatch(/cargo_add → Cargo C-1 added: Kyiv → Lviv, 200 kg/);
    expect(out).toMatch(/bot> Done! Your cargo C-1 is registered: Kyiv → Lviv, 200 kg\./);
    expect(out).toMatch(/bot> Your cargo:\n- C-1: Kyiv → Lviv, 200 kg/);
    expect(child.stderr()).toBe('');
  });

  it('lets a transporter find cargo a client added, in the same process', async () => {
    const child = spawnNode(RUN, ['chat', '--mcp-port', '0', '--data', dataDir()], { cwd: REPO_ROOT });
    typeLines(child, ['I ship: 3 t from Odesa to Kharkiv', 'I am a transporter', 'find cargo to Kharkiv', 'find cargo to Lviv', '/exit']);
    expect(await child.waitForExit(CHILD_BOUND_MS)).toEqual({ code: 0, signal: null });
    const out = child.stdout();
    expect(out).toMatch(/bot> Done! Your cargo C-1 is registered: Odesa → Kharkiv, 3000 kg\./);
    expect(out).toContain('set_role → Role set to transporter');
    expect(out).toMatch(/bot> Open cargo I found:\n- C-1: Odesa → Kharkiv, 3000 kg/);
    expect(out).toContain('bot> No open cargo matches that route right now.');
  });

  it('serves the web chat and AG-UI, and stops cleanly on SIGTERM', async () => {
    const child = spawnNode(RUN, ['serve', '--port', '0', '--mcp-port', '0', '--data', dataDir()], { cwd: REPO_ROOT });
    const [, url] = await child.waitForOutput(/Palaver is listening on (http:\/\/\S+)/, CHILD_BOUND_MS);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    const response = await fetch(`${url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        threadId: 't1',
        runId: 'r1',
        messages: [{ id: 'm1', role: 'user', content: 'I carry cargo' }],
        tools: [],
        context: [],
        state: {},
        forwardedProps: {},
      }),
    });
    const events = parseSse(await response.text());
    expect(events.find((event) => event.type === 'CUSTOM' && event['name'] === 'palaver.tool_progress')).toMatchObject({
      value: { status: 'running', label: 'Working on it…' },
    });
    expect(JSON.stringify(events)).not.toContain('set_role');
    const reply = events
      .filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')
      .map((event) => event['delta'])
      .join('');
    expect(reply).toMatch(/^You are set up as a transporter\./);
    expect(events.at(-1)?.type).toBe('RUN_FINISHED');
    expect(await child.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});

describe('logisticsScript', () => {
  const call = (text: string, toolNames: readonly string[]): ScriptedCall => {
    const messages = [{ type: 'message', role: 'user', content: text }] as const;
    return { api: 'chat', model: 'm', instructions: '', messages, history: messages, toolNames, hostedMcpLabels: [], stream: true, headers: {}, body: {} };
  };

  it('asks for the role before one is known, and only calls tools it is offered', async () => {
    expect(await logisticsScript(call('hello', ['set_role']))).toEqual({ text: expect.stringMatching(/ship cargo \(client\) or carry it \(transporter\)/) });
    expect(await logisticsScript(call('ship 200 kg from Kyiv to Lviv', []))).toEqual({ text: expect.any(String) });
    expect(await logisticsScript(call('show my cargo', ['set_role', 'find_cargoes']))).toMatchObject({ toolCalls: [{ name: 'find_cargoes' }] });
  });

  it('takes a complete shipment from someone without a role as a client', async () => {
    expect(await logisticsScript(call('ship 200 kg from Kyiv to Lviv', ['set_role']))).toEqual({
      toolCalls: [{ name: 'set_role', arguments: { role: 'client' } }],
    });
  });

  it('asks for what is missing from a shipment', async () => {
    const reply = await logisticsScript(call('I need to send 2 t from Odesa', ['set_role', 'cargo_add', 'get_user_cargoes']));
    expect(reply.text).toMatch(/tell me where it goes, for example/);
  });
});

describe('parseShipment', () => {
  it.each([
    ['ship 200 kg from Kyiv to Lviv', { weightKg: 200, from: 'Kyiv', to: 'Lviv' }],
    ['I need to ship 1.5 t from New York to Lviv please', { weightKg: 1500, from: 'New York', to: 'Lviv' }],
    ['send 3 tonnes from kyiv to lviv tomorrow', { weightKg: 3000, from: 'Kyiv', to: 'Lviv' }],
    ['ship from Kyiv to Lviv, 300 kg', { weightKg: 300, from: 'Kyiv', to: 'Lviv' }],
    ['find cargo to Lviv', { to: 'Lviv' }],
    ['hello', {}],
  ])('reads %j', (text, expected) => {
    expect(parseShipment(text)).toEqual(expected);
  });
});
