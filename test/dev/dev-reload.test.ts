import { afterEach, describe, expect, it, vi } from 'vitest';
import { startDevServer, type DevServer } from '../../src/dev/dev-server.js';
import { openSqliteFile } from '../support/sqlite-file.js';
import { createDevProject, toolsModule, type DevProject } from './dev-project.js';

interface TurnsBody {
  readonly turns: { readonly calls: { readonly kind: string; readonly instructions?: string; readonly input?: { readonly content?: string }[] }[] }[];
}

describe('palaver dev reloads the agent when its files change', () => {
  let project: DevProject | undefined;
  let dev: DevServer | undefined;

  afterEach(async () => {
    await dev?.close();
    project?.remove();
    dev = undefined;
    project = undefined;
  });

  async function start(): Promise<{ dev: DevServer; reports: string[] }> {
    project = createDevProject();
    const reports: string[] = [];
    dev = await startDevServer({ cwd: project.dir, port: 0, debounceMs: 50, report: (line) => reports.push(line) });
    return { dev, reports };
  }

  async function ask(server: DevServer, text: string): Promise<string> {
    const reply = await server.palaver!.chat({ userId: 'dana', text });
    return reply.text;
  }

  async function lastModelCall(server: DevServer) {
    const body = (await (await fetch(`${server.url}/dev/api/turns`)).json()) as TurnsBody;
    const calls = body.turns[0]!.calls.filter((call) => call.kind === 'model');
    return calls[calls.length - 1]!;
  }

  it('uses a changed tool and changed instructions on the next turn, in the same conversation', async () => {
    const { dev, reports } = await start();
    expect(await ask(dev, 'Are you open on Saturday?')).toBe('We are open saturday: 9:00-17:00.');

    project!.write('tools/index.ts', toolsModule('10:00-16:00'));
    await vi.waitFor(() => expect(reports.join('\n')).toMatch(/Reloaded after a change to tools\/index\.ts in \d+ ms \(roles: guest; tools: opening_hours\)/), {
      timeout: 10_000,
    });
    expect(await ask(dev, 'Are you open on Saturday?')).toBe('We are open saturday: 10:00-16:00.');

    project!.write('instructions/base.md', 'You are the second version of the agent.\n');
    await vi.waitFor(() => expect(reports.filter((line) => line.includes('instructions/base.md'))).toHaveLength(1), { timeout: 10_000 });
    expect(await ask(dev, 'hello again')).toBe('You said: "hello again"');
    const call = await lastModelCall(dev);
    expect(call.instructions).toContain('You are the second version of the agent.');
    expect(call.instructions).not.toContain('first version');
    // Same database: the model still sees the first turns of the conversation.
    expect(call.input?.map((item) => item.content)).toContain('Are you open on Saturday?');
    const db = openSqliteFile(`${project!.dir}/data/palaver.db`);
    expect(db.get<{ n: number }>("SELECT count(*) AS n FROM messages WHERE role = 'user'")?.n).toBe(3);
    db.close();
  });

  it('keeps the old agent and reports the error when a changed file is broken, and reloads once it is fixed', async () => {
    const { dev, reports } = await start();
    const before = dev.palaver;
    project!.write('tools/index.ts', 'export const tools = [ {{ not typescript');
    await vi.waitFor(() => expect(reports.join('\n')).toMatch(/Reload refused \(tools\/index\.ts\): agent\.toolsModule .* cannot be loaded/), {
      timeout: 10_000,
    });
    expect(reports.join('\n')).toContain('The agent keeps running as before');
    expect(dev.palaver).toBe(before);
    expect(await ask(dev, 'Are you open on Monday?')).toBe('We are open monday: 9:00-17:00.');

    project!.write('model-replies.yaml', 'rules: [ { when: "(" } ]\n');
    await vi.waitFor(() => expect(reports.join('\n')).toMatch(/Reload refused \(.*model-replies\.yaml\)/), { timeout: 10_000 });
    expect(await ask(dev, 'Are you open on Monday?')).toBe('We are open monday: 9:00-17:00.');

    project!.write('model-replies.yaml', 'otherwise: "Fixed: {{text}}"\n');
    project!.write('tools/index.ts', toolsModule('8:00-12:00'));
    await vi.waitFor(() => expect(reports.some((line) => line.startsWith('Reloaded after a change to'))).toBe(true), { timeout: 10_000 });
    expect(await ask(dev, 'anything')).toBe('Fixed: anything');
  });
});
