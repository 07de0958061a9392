import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createPalaver, type Palaver } from '../../src/app.js';
import { ConfigError } from '../../src/domain/errors.js';
import { isLocalEndpoint } from '../../src/models/api-key-policy.js';
import { silentLogger } from '../../src/observability/logger.js';
import { defineTool } from '../../src/tools/define-tool.js';

const dirs: string[] = [];
const running: Palaver[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((palaver) => palaver.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder with instructions and, when given, a rules file `rules.yaml`. */
function project(rules?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-offline-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'instructions'));
  writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
  if (rules !== undefined) writeFileSync(join(dir, 'rules.yaml'), rules);
  return dir;
}

const openingHours = defineTool({
  name: 'opening_hours',
  description: 'Opening hours for one day',
  input: z.object({ day: z.string() }),
  run: ({ day }) => `${day}: 10:00–16:00`,
});

async function start(dir: string, model: Record<string, unknown>): Promise<Palaver> {
  const palaver = await createPalaver(
    {
      model: { provider: 'scripted', name: 'scripted', ...model },
      agent: { instructionsDir: 'instructions' },
      database: { url: 'sqlite::memory:' },
      channels: { web: { enabled: false }, telegram: { enabled: false } },
    },
    { cwd: dir, tools: [openingHours], logger: silentLogger() },
  );
  running.push(palaver);
  return palaver;
}

describe('the built-in offline model (model.provider: "scripted")', () => {
  it('answers without a key or a network: it echoes what the person wrote', async () => {
    const palaver = await start(project(), {});
    const reply = await palaver.chat({ userId: 'ada', text: 'Hello there' });
    expect(reply).toMatchObject({ text: 'Hello there', status: 'completed' });
    expect(reply.usage.cost).toBe('0');
  });

  it('follows a rules file: a reply by pattern, a tool call with arguments from the message, and the reply from its result', async () => {
    const rules = [
      'rules:',
      '  - when: open on (?<day>\\w+day)',
      '    tool: opening_hours',
      '    arguments: { day: "{{day | lower}}" }',
      '    reply: "We are open {{result}}."',
      '  - when: ^(hi|hello)\\b',
      '    reply: Hello! Ask me when we are open.',
      'otherwise: "I only know our opening hours (you said: {{text}})"',
    ].join('\n');
    const palaver = await start(project(rules), { script: 'rules.yaml' });
    expect((await palaver.chat({ userId: 'ada', text: 'Are you open on Saturday?' })).text).toBe('We are open saturday: 10:00–16:00.');
    expect((await palaver.chat({ userId: 'ada', text: 'hello' })).text).toBe('Hello! Ask me when we are open.');
    expect((await palaver.chat({ userId: 'ada', text: 'Do you sell bread?' })).text).toBe('I only know our opening hours (you said: Do you sell bread?)');
  });

  it('refuses a rules file it cannot use, naming the file and the rule', async () => {
    const dir = project('rules:\n  - when: "(unclosed"\n    reply: x\n  - when: fine\n');
    const error = await start(dir, { script: 'rules.yaml' }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(join(dir, 'rules.yaml'));
    expect((error as Error).message).toMatch(/rules\.0\.when: .*Invalid regular expression/);
    expect((error as Error).message).toContain('rules.1: a rule needs reply, tool or both');
  });
});

describe('a model that needs a key', () => {
  it('refuses to start without one, naming the setting and the environment variable', async () => {
    const dir = project();
    const error = await createPalaver(
      {
        model: { name: 'gpt-4.1-mini', baseUrl: 'https://api.openai.com/v1' },
        agent: { instructionsDir: 'instructions' },
        database: { url: 'sqlite::memory:' },
      },
      { cwd: dir, logger: silentLogger() },
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('model.apiKey is not set, and https://api.openai.com/v1 needs a key: put it in PALAVER_LLM_API_KEY');
    expect((error as Error).message).toContain('model.provider: scripted');
  });

  it('is any endpoint off this machine and its network; a local server (Ollama, vLLM, a compose service) may go without', () => {
    for (const url of [
      'http://127.0.0.1:11434/v1',
      'http://localhost:8000/v1',
      'http://[::1]:8080/v1',
      'http://10.1.2.3/v1',
      'http://192.168.1.5/v1',
      'http://ollama:11434/v1',
      'http://gpu.internal/v1',
    ])
      expect(isLocalEndpoint(url), url).toBe(true);
    for (const url of ['https://api.openai.com/v1', 'https://api.x.ai/v1', 'http://172.32.0.1/v1', 'http://8.8.8.8/v1', 'not a url'])
      expect(isLocalEndpoint(url), url).toBe(false);
  });
});
