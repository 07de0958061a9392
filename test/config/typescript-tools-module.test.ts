import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/domain/errors.js';
import { loadToolsModule } from '../../src/tool-hosts.js';

// A tools module written in TypeScript, with annotations Node must strip (or tsx must compile) before it runs.
const TOOLS_TS = `
interface Echo { readonly name: string; readonly description: string }
const echo: Echo = { name: 'echo', description: 'says it back' };
export const tools: readonly Echo[] = [echo];
`;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function moduleIn(parent: string): string {
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(join(parent, 'palaver-tools-'));
  dirs.push(dir);
  const file = join(dir, 'tools.ts');
  writeFileSync(file, TOOLS_TS);
  return file;
}

const nodeStripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);

describe('a TypeScript agent.toolsModule', () => {
  it('loads in a project that has tsx installed, on every Node', async () => {
    // Inside this repository tsx resolves from the module's folder, as it would in a project that installed it.
    const file = moduleIn(join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'palaver-test'));
    const tools = await loadToolsModule(file);
    expect(tools.map((tool) => tool.name)).toEqual(['echo']);
  });

  it('loads on a Node that strips types, and elsewhere says what to do instead of "Unknown file extension"', async () => {
    const file = moduleIn(tmpdir());
    if (nodeStripsTypes) {
      expect((await loadToolsModule(file)).map((tool) => tool.name)).toEqual(['echo']);
      return;
    }
    const error = await loadToolsModule(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(`agent.toolsModule ${file} is TypeScript`);
    expect((error as Error).message).toContain('Node 22.18+ or 24');
    expect((error as Error).message).toContain('npm install --save-dev tsx');
    expect((error as Error).message).not.toContain('Unknown file extension');
  });
});
