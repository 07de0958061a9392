import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_SECRETS } from '../support/secrets.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from './child-process.js';

// `palaver admin` as an operator runs it: the built CLI (bin/palaver.js over dist/; `npm test` builds first) in its
// own process, against a real `palaver start --demo` (scripted model, real SQLite) in another.
// Each CLI start takes seconds on a busy machine; the longest test starts fifteen.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const BIN = join(REPO_ROOT, 'bin', 'palaver.js');
const TOKEN = TEST_SECRETS.adminToken;
const dirs: string[] = [];
let server: { child: RunningChild; url: string; cwd: string };

function tempCwd(): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-admin-'));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  const cwd = tempCwd();
  const child = spawnNode(BIN, ['start', '--demo', '--port', '0'], { cwd, env: cleanEnv({ PALAVER_ADMIN_TOKEN: TOKEN }) });
  const match = await child.waitForOutput(/Palaver is listening on (http:\/\/[^\s]+)/, 30_000);
  server = { child, url: match[1]!, cwd };
});

afterAll(async () => {
  await killAll();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `palaver admin …` to its end, in a fresh folder unless `cwd` is given. */
async function admin(
  args: readonly string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnNode(BIN, ['admin', ...args], { cwd: options.cwd ?? tempCwd(), env: cleanEnv(options.env ?? { PALAVER_ADMIN_TOKEN: TOKEN }) });
  const exit = await child.waitForExit(30_000);
  return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
}

describe('palaver admin: arguments and exit codes', () => {
  it('documents every command and the exit codes in --help', async () => {
    const help = await admin(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['users', 'conversations', 'show', 'send', 'take', 'pause', 'resume', 'end', 'costs', 'handoffs', 'actions', 'operators'])
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done\n {2}1 {2}usage error.*\n {2}2 {2}not found.*\n {2}3 {2}refused.*\n {2}4 {2}unavailable/);
    expect(help.stdout).toContain('PALAVER_ADMIN_TOKEN');
  });

  it('exits 1 on a usage error, before any request', async () => {
    const cases = [
      ['--url', server.url, 'users', '--limit', '0'],
      ['--url', server.url, 'conversations', '--status', 'sleeping'],
      ['--url', server.url, 'costs', '--by', 'week'],
      ['--url', server.url, 'costs', '--from', 'last tuesday'],
      ['--url', server.url, 'send', 'only-a-session-id'],
      ['--url', server.url, 'frobnicate'],
    ];
    // One at a time: six CLIs starting at once on a busy two-core machine outlast any fair timeout.
    for (const args of cases) {
      const run = await admin(args);
      expect({ args, code: run.code }).toEqual({ args, code: 1 });
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toBe('');
    }
  }, 180_000);

  it('exits 4 and says so when no Palaver answers at the URL', async () => {
    const closed = await freePort();
    const run = await admin(['--url', `http://127.0.0.1:${closed}`, 'conversations']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`Cannot reach Palaver at http://127.0.0.1:${closed}`);
    expect(run.stderr).toContain('--url');
  });

  it("exits 3 with the server's reason for a wrong or missing token, and never prints the token", async () => {
    const wrong = await admin(['--url', server.url, 'users'], { env: { PALAVER_ADMIN_TOKEN: 'not-the-admin-token-at-all' } });
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain('admin token');
    const missing = await admin(['--url', server.url, '--json', 'conversations'], { env: {} });
    expect(missing.code).toBe(3);
    expect(missing.stdout).toBe('');
    for (const run of [wrong, missing]) expect(run.stdout + run.stderr).not.toContain(TOKEN);
  });

  it("exits 4 for a 5xx, and for an answer that is not the admin API's", async () => {
    const fake = await answering((path) =>
      path.startsWith('/admin/users') ? [500, { error: { code: 'internal_error', message: 'The server failed.' } }] : [200, { hello: 'world' }],
    );
    try {
      const failed = await admin(['--url', fake.url, 'users']);
      expect(failed.code).toBe(4);
      expect(failed.stderr).toContain('The server failed.');
      const foreign = await admin(['--url', fake.url, 'costs']);
      expect(foreign.code).toBe(4);
      expect(foreign.stderr).toContain('not the admin API');
    } finally {
      fake.server.close();
    }
  });

  it("shows a conversation's summaries above its messages: each version's range and cost, the text of the one the agent reads", async () => {
    const at = '2026-03-01T12:00:00.000Z';
    const summary = { fromSeq: 0, model: 'gpt-4.1-mini', inputTokens: 900, outputTokens: 60, currency: 'USD', at };
    const fake = await answering(() => [
      200,
      {
        conversation: {
          sessionId: 'session-1',
          channel: 'telegram',
          conversationId: '42',
          title: null,
          user: { id: 'user-1', displayName: 'Ann' },
          status: 'completed',
          paused: false,
          endedAt: null,
          assignedTo: null,
          handoff: null,
          lastMessage: null,
          waiting: 0,
          cost: '0.01',
          currency: 'USD',
          inputTokens: 1000,
          outputTokens: 100,
          createdAt: at,
          updatedAt: at,
        },
        messages: [
          { id: 'm', seq: 121, role: 'user', audience: 'display', text: 'Thanks!', at, correlationId: null, model: null, cost: '0', author: 'person' },
        ],
        summaries: [
          { ...summary, version: 2, toSeq: 110, text: 'Ann Smith; door code 4711.\nVisit moved to Friday.', cost: '0.0021', current: true },
          { ...summary, version: 1, toSeq: 52, text: 'Ann Smith; door code 4711.', cost: '0.0012', current: false },
        ],
      },
    ]);
    try {
      const shown = await admin(['--url', fake.url, 'show', 'session-1']);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(
        /Summaries of the earlier conversation \(newest first\):\n {2}v2 {2}#1–#110 .* 0\.0021 USD · gpt-4\.1-mini {2}\(read by the agent now\)\n {6}Ann Smith; door code 4711\.\n {6}Visit moved to Friday\.\n {2}v1 {2}#1–#52 .* 0\.0012 USD · gpt-4\.1-mini\n\n#121 /,
      );
    } finally {
      fake.server.close();
    }
  });

  it('finds the Palaver started in the same folder, on the port --port gave it, without --url', async () => {
    // The server of beforeAll runs in server.cwd on a free port (--port 0), not on the default 3000.
    const found = await admin(['users'], { cwd: server.cwd });
    expect(found.code, found.stderr).toBe(0);
  });

  it("finds the local Palaver from the config file's server.port and its token from server.adminToken", async () => {
    const cwd = tempCwd();
    const port = Number(new URL(server.url).port);
    writeFileSync(join(cwd, 'palaver.config.json'), JSON.stringify({ model: { name: 'x' }, server: { port, adminToken: 'a-wrong-token-from-the-config' } }));
    // Reached (401 → 3, not unreachable → 4), with the config's token: the wrong one.
    const fromConfig = await admin(['users'], { cwd, env: {} });
    expect(fromConfig.code).toBe(3);
    expect(fromConfig.stderr).toContain('admin token');
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A stand-in server that answers every request with `reply(path)`'s status and JSON. */
async function answering(reply: (path: string) => [number, unknown]): Promise<{ server: Server; url: string }> {
  const fake = createServer((request, response) => {
    const [status, body] = reply(request.url ?? '/');
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  return { server: fake, url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}` };
}

/** One AG-UI run on the demo server: a turn on the web channel, as a person in the chat page makes one. */
async function chatOnWeb(text: string, threadId: string): Promise<void> {
  const response = await fetch(`${server.url}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({
      threadId,
      runId: `run-${threadId}-${Date.now()}`,
      messages: [{ id: `u-${Date.now()}`, role: 'user', content: text }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('RUN_FINISHED');
}

describe('palaver admin against a running Palaver', () => {
  it('lists the conversation, shows its transcript with the tool call under --audit, and its cost', async () => {
    await chatOnWeb('what time is it?', 'admin-thread-1');
    const url = ['--url', server.url];

    const listed = await admin([...url, '--json', 'conversations', '--channel', 'web']);
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout) as {
      conversations: { sessionId: string; conversationId: string; lastMessage: { text: string } | null }[];
      nextCursor: string | null;
    };
    const conversation = page.conversations.find((entry) => entry.conversationId.includes('admin-thread-1'))!;
    expect(conversation).toBeDefined();
    expect(conversation.lastMessage?.text).toMatch(/^It is .+ where you are\.$/);

    const table = await admin([...url, 'conversations']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^SESSION +CHANNEL +PERSON +STATUS +WAIT +COST +LAST MESSAGE +UPDATED$/m);
    expect(table.stdout).toContain(conversation.sessionId);

    const shown = await admin([...url, 'show', conversation.sessionId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/#\d+ +\S+ \S+ +person\n {4}what time is it\?/);
    expect(shown.stdout).toMatch(/agent.*\n {4}It is .+ where you are\./);
    expect(shown.stdout).not.toContain('current_time');
    const audited = await admin([...url, 'show', conversation.sessionId, '--audit']);
    expect(audited.stdout).toMatch(/↳ current_time\(.*\) succeeded/);

    const costs = await admin([...url, '--json', 'costs', '--by', 'conversation']);
    expect(costs.code).toBe(0);
    const rows = (JSON.parse(costs.stdout) as { rows: { key: string; turns: number }[] }).rows;
    expect(rows.find((row) => row.key === conversation.sessionId)?.turns).toBe(1);
    const costTable = await admin([...url, 'costs']);
    expect(costTable.stdout).toMatch(/^DAY +NAME +COST +CUR +TURNS +IN +OUT +MODELS$/m);
    expect(costTable.stdout).toMatch(/\nTotal: \S+ [A-Z]{3}/);

    const users = await admin([...url, 'users']);
    expect(users.code).toBe(0);
    expect(users.stdout).toMatch(/^USER +NAME +PHONE +ROLE +ACCOUNTS +CONV +COST +LAST ACTIVE$/m);
    expect(users.stdout).toContain('web:');
  });

  it('exits 2 for a conversation that does not exist', async () => {
    const runs = await Promise.all([
      admin(['--url', server.url, 'show', 'no-such-session']),
      admin(['--url', server.url, 'pause', 'no-such-session']),
      admin(['--url', server.url, 'send', 'no-such-session', 'hello']),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
    }
  });

  it('sends as the agent once per Idempotency-Key, and pauses, resumes and ends the conversation', async () => {
    await chatOnWeb('hello', 'admin-thread-2');
    const url = ['--url', server.url];
    const page = JSON.parse((await admin([...url, '--json', 'conversations', '--search', 'admin-thread-2'])).stdout) as {
      conversations: { sessionId: string }[];
    };
    const sessionId = page.conversations[0]!.sessionId;

    const sent = await admin([...url, '--actor', 'Ops Anna', 'send', sessionId, 'An', 'operator', 'here.']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(/^Sent as the agent: message \S+ \(1 part\)\.$/m);
    const key = /^Idempotency-Key: (\S+)/m.exec(sent.stdout)![1]!;
    const again = await admin([...url, '--json', 'send', sessionId, 'An operator here.', '--key', key]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ duplicate: true, parts: 1 });
    expect(again.stderr).toContain(`Idempotency-Key: ${key}`);
    const transcript = JSON.parse((await admin([...url, '--json', 'show', sessionId])).stdout) as { messages: { author: string; text: string }[] };
    expect(transcript.messages.filter((message) => message.author === 'operator').map((message) => message.text)).toEqual(['An operator here.']);

    const paused = await admin([...url, 'pause', sessionId]);
    expect(paused.code).toBe(0);
    expect(paused.stdout).toContain('Paused');
    const pausedList = JSON.parse((await admin([...url, '--json', 'conversations', '--paused'])).stdout) as {
      conversations: { sessionId: string; paused: boolean }[];
    };
    expect(pausedList.conversations.map((entry) => entry.sessionId)).toEqual([sessionId]);

    expect((await admin([...url, 'resume', sessionId])).code).toBe(0);
    const resumedList = JSON.parse((await admin([...url, '--json', 'conversations', '--paused'])).stdout) as { conversations: unknown[] };
    expect(resumedList.conversations).toEqual([]);

    const ended = await admin([...url, 'end', sessionId]);
    expect(ended.code).toBe(0);
    expect(ended.stdout).toContain('Ended');
    const after = JSON.parse((await admin([...url, '--json', 'show', sessionId])).stdout) as { conversation: { endedAt: string | null } };
    expect(after.conversation.endedAt).not.toBeNull();

    // The audit: who did what, each with the request id the console sent.
    const audit = JSON.parse((await admin([...url, '--json', 'actions'])).stdout) as {
      actions: { action: string; actor: string; sessionId: string | null; requestId: string | null }[];
    };
    const mine = audit.actions.filter((entry) => entry.sessionId === sessionId);
    expect(mine.map((entry) => entry.action)).toEqual(['end', 'resume', 'pause', 'send']);
    expect(mine.find((entry) => entry.action === 'send')?.actor).toBe('Ops Anna');
    for (const entry of mine) expect(entry.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const auditTable = await admin([...url, 'actions']);
    expect(auditTable.stdout).toMatch(/^AT +ACTOR +ACTION +SESSION +USER +REQUEST$/m);
    expect(auditTable.stdout).toMatch(/Ops Anna +send/);
  });

  it('takes a conversation for one operator, refuses another (exit 3, naming who has it) unless forced, and hands it back with a note', async () => {
    await chatOnWeb('I need help', 'admin-thread-take');
    const url = ['--url', server.url];
    const page = JSON.parse((await admin([...url, '--json', 'conversations', '--search', 'admin-thread-take'])).stdout) as {
      conversations: { sessionId: string }[];
    };
    const sessionId = page.conversations[0]!.sessionId;

    const took = await admin([...url, '--actor', 'Olena', 'take', sessionId]);
    expect(took.code).toBe(0);
    expect(took.stdout).toContain('Taken: assigned to Olena; the agent is paused until you resume.');
    const refused = await admin([...url, '--actor', 'Mark', 'take', sessionId]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('Olena has taken this conversation');
    expect((await admin([...url, '--actor', 'Mark', 'take', sessionId, '--force'])).code).toBe(0);
    const shown = await admin([...url, 'show', sessionId]);
    expect(shown.stdout).toMatch(/paused, with Mark/);

    const resumed = await admin([...url, '--actor', 'Mark', 'resume', sessionId, '--note', 'Refund approved, tell them.']);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('The agent reads your note in its next turn.');
    const after = JSON.parse((await admin([...url, '--json', 'show', sessionId])).stdout) as {
      conversation: { assignedTo: string | null; paused: boolean };
      messages: { text: string; author: string }[];
    };
    expect(after.conversation).toMatchObject({ assignedTo: null, paused: false });
    expect(after.messages.find((message) => message.text === 'Refund approved, tell them.')?.author).toBe('operator');
  });

  it('follows every page with --all', async () => {
    await Promise.all([chatOnWeb('hello', 'admin-thread-3'), chatOnWeb('hello', 'admin-thread-4')]);
    const url = ['--url', server.url];
    const first = JSON.parse((await admin([...url, '--json', 'conversations', '--limit', '1'])).stdout) as {
      conversations: { sessionId: string }[];
      nextCursor: string | null;
    };
    expect(first.conversations).toHaveLength(1);
    expect(first.nextCursor).not.toBeNull();
    const table = await admin([...url, 'conversations', '--limit', '1']);
    expect(table.stdout).toContain(`More: add --cursor ${first.nextCursor} (or --all).`);
    const next = JSON.parse((await admin([...url, '--json', 'conversations', '--limit', '1', '--cursor', first.nextCursor!])).stdout) as {
      conversations: { sessionId: string }[];
    };
    expect(next.conversations[0]!.sessionId).not.toBe(first.conversations[0]!.sessionId);
    const all = JSON.parse((await admin([...url, '--json', 'conversations', '--limit', '1', '--all'])).stdout) as {
      conversations: { sessionId: string }[];
      nextCursor: string | null;
    };
    expect(all.nextCursor).toBeNull();
    expect(new Set(all.conversations.map((entry) => entry.sessionId)).size).toBe(all.conversations.length);
    expect(all.conversations.length).toBeGreaterThanOrEqual(3);
  });
});

describe('palaver admin operators', () => {
  it('adds operators who then act under their own names, lists them, refuses them the admin commands, and disables one by name', async () => {
    const url = ['--url', server.url];
    const added = await admin([...url, 'operators', 'add', 'Olena Koval']);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^Added Olena Koval \(operator\), id [0-9a-f-]{36}\.$/m);
    const olenaToken = /^(pvo_[\w-]{43})$/m.exec(added.stdout)![1]!;
    const lead = JSON.parse((await admin([...url, '--json', 'operators', 'add', 'Lead', '--role', 'admin'])).stdout) as {
      operator: { id: string; role: string };
      token: string;
    };
    expect(lead.operator.role).toBe('admin');
    const taken = await admin([...url, 'operators', 'add', 'olena koval']);
    expect(taken.code).toBe(3);
    expect(taken.stderr).toContain('already');
    expect((await admin([...url, 'operators', 'add', 'x', '--role', 'owner'])).code).toBe(1);

    const table = await admin([...url, 'operators', 'list']);
    expect(table.stdout).toMatch(/^NAME +ROLE +ID +CREATED +DISABLED$/m);
    expect(table.stdout).toMatch(/^Olena Koval +operator +[0-9a-f-]{36} /m);
    expect(table.stdout + added.stderr).not.toContain(lead.token);

    // Olena works with her own token: the audit names her account, not what --actor says.
    await chatOnWeb('hello', 'operators-thread-1');
    const asOlena = { env: { PALAVER_OPERATOR_TOKEN: olenaToken } };
    const page = JSON.parse((await admin([...url, '--json', 'conversations', '--search', 'operators-thread-1'], asOlena)).stdout) as {
      conversations: { sessionId: string }[];
    };
    const sessionId = page.conversations[0]!.sessionId;
    const paused = await admin([...url, '--actor', 'Someone Else', 'pause', sessionId], asOlena);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stderr).toContain('--actor is not sent');
    const audit = JSON.parse((await admin([...url, '--json', 'actions'])).stdout) as { actions: { action: string; actor: string; sessionId: string | null }[] };
    expect(audit.actions.find((entry) => entry.sessionId === sessionId && entry.action === 'pause')?.actor).toBe('Olena Koval');
    const refused = await admin([...url, 'operators', 'list'], asOlena);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('for admins');

    // An admin account manages operators too; disabling Olena by name stops her token at once.
    const disabled = await admin([...url, 'operators', 'disable', 'OLENA KOVAL'], { env: { PALAVER_OPERATOR_TOKEN: lead.token } });
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(disabled.stdout).toContain('Disabled Olena Koval');
    const after = await admin([...url, 'conversations'], asOlena);
    expect(after.code).toBe(3);
    expect(after.stderr).toContain('operator token');
    const listed = JSON.parse((await admin([...url, '--json', 'operators', 'list'])).stdout) as { operators: { name: string; disabledAt: string | null }[] };
    expect(listed.operators.find((operator) => operator.name === 'Olena Koval')?.disabledAt).not.toBeNull();
    expect((await admin([...url, 'operators', 'disable', 'nobody-by-that-name'])).code).toBe(2);

    const reset = await admin([...url, '--json', 'operators', 'reset-token', lead.operator.id]);
    expect(reset.code, reset.stderr).toBe(0);
    const fresh = (JSON.parse(reset.stdout) as { token: string }).token;
    expect(fresh).not.toBe(lead.token);
    expect((await admin([...url, 'operators', 'list'], { env: { PALAVER_OPERATOR_TOKEN: lead.token } })).code).toBe(3);
    expect((await admin([...url, 'operators', 'list'], { env: { PALAVER_OPERATOR_TOKEN: fresh } })).code).toBe(0);
  }, 300_000);
});
