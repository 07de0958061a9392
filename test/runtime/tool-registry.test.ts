import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCallContext } from '../../src/domain/ports/tool-host.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';

const tool = (name: string) => defineTool({ name, description: name, input: z.object({}), run: () => `${name} ran` });
const ctx = { userId: 'u1' } as unknown as ToolCallContext;
const host = new LocalToolHost([tool('set_role'), tool('cargo_add'), tool('find_cargoes')]);
const policy = { roles: { client: { tools: ['set_role', 'cargo_add'] } }, withoutRole: ['set_role'] };

describe('ToolRegistry', () => {
  it('offers every tool when no roles are defined', async () => {
    const tools = await new ToolRegistry([host]).toolsFor(null);
    expect(tools.specs.map((spec) => spec.name)).toEqual(['set_role', 'cargo_add', 'find_cargoes']);
  });

  it('offers only the no-role tools before a role is known, and the role allowlist after', async () => {
    const registry = new ToolRegistry([host], policy);
    expect((await registry.toolsFor(null)).specs.map((spec) => spec.name)).toEqual(['set_role']);
    expect((await registry.toolsFor('client')).specs.map((spec) => spec.name)).toEqual(['set_role', 'cargo_add']);
  });

  it('refuses a tool outside the allowlist even when the model names it', async () => {
    const tools = await new ToolRegistry([host], policy).toolsFor('client');
    expect(await tools.call('find_cargoes', {}, ctx)).toEqual({ content: 'Tool find_cargoes is not available to role client.', isError: true });
    expect(await tools.call('cargo_add', {}, ctx)).toMatchObject({ content: 'cargo_add ran', isError: false });
  });

  it('treats an unknown role like no role rather than granting everything', async () => {
    const tools = await new ToolRegistry([host], policy).toolsFor('removed-role');
    expect(tools.specs.map((spec) => spec.name)).toEqual(['set_role']);
  });

  it('reports allowlisted tools no host provides and name clashes between hosts', async () => {
    const registry = new ToolRegistry([host, new LocalToolHost([tool('cargo_add')])], { roles: { client: { tools: ['cargo_add', 'teleport'] } }, withoutRole: [] });
    const problems = await registry.diagnose();
    expect(problems).toContain('role client allows tool "teleport", but no tool host provides it');
    expect(problems.some((problem) => problem.startsWith('Tool "cargo_add" is offered by local and local'))).toBe(true);
  });
});
