import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCallContext, ToolDescriptor, ToolHost } from '../../src/domain/ports/tool-host.js';
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

  it('lets a tool grant only a configured role whose allowlist names it', () => {
    const registry = new ToolRegistry([host], { roles: { ...policy.roles, admin: { tools: ['cargo_add'] } }, withoutRole: ['set_role'] });
    expect(registry.mayGrantRole('set_role', 'client')).toBe(true);
    expect(registry.mayGrantRole('set_role', 'admin')).toBe(false);
    expect(registry.mayGrantRole('set_role', 'root-nonexistent')).toBe(false);
    expect(registry.mayGrantRole('set_role', 'constructor')).toBe(false);
    // With no roles configured, roles restrict nothing.
    expect(new ToolRegistry([host]).mayGrantRole('set_role', 'anything')).toBe(true);
  });

  it('treats an unknown role like no role rather than granting everything', async () => {
    const tools = await new ToolRegistry([host], policy).toolsFor('removed-role');
    expect(tools.specs.map((spec) => spec.name)).toEqual(['set_role']);
  });

  it('reports allowlisted tools no host provides and name clashes between hosts', async () => {
    const registry = new ToolRegistry([host, new LocalToolHost([tool('cargo_add')])], {
      roles: { client: { tools: ['cargo_add', 'teleport'] } },
      withoutRole: [],
    });
    const problems = await registry.diagnose();
    expect(problems).toContain('role client allows tool "teleport", but no tool host provides it');
    expect(problems.some((problem) => problem.startsWith('Tool "cargo_add" is offered by local and local'))).toBe(true);
  });

  /** A remote host whose listing can fail and whose tools can change, as an MCP server's do. */
  function remoteHost(name: string) {
    const state = { tools: [] as ToolDescriptor[], failing: false, closed: 0, calls: [] as string[] };
    const remote: ToolHost = {
      name,
      list: async () => {
        if (state.failing) throw new Error('connection refused');
        return state.tools;
      },
      call: async (tool) => {
        state.calls.push(tool);
        return { content: `${name} ran ${tool}`, isError: false };
      },
      close: async () => {
        state.closed += 1;
        throw new Error('already gone');
      },
    };
    const descriptor = (tool: string): ToolDescriptor => ({ name: tool, description: tool, parameters: { type: 'object', properties: {} }, source: name });
    return { remote, state, descriptor };
  }

  it('skips a host that cannot list its tools, reports it, and offers its tools again once it answers', async () => {
    const { remote, state, descriptor } = remoteHost('mcp:crm');
    state.tools = [descriptor('crm_lookup')];
    const registry = new ToolRegistry([host, remote]);
    const first = await registry.toolsFor(null);
    expect(await registry.toolsFor(null)).toBe(first); // unchanged lists: the same set
    expect(first.has('crm_lookup')).toBe(true);

    state.failing = true;
    const failures: string[] = [];
    const without = await registry.toolsFor(null, (name, error) => failures.push(`${name}: ${(error as Error).message}`));
    expect(failures).toEqual(['mcp:crm: connection refused']);
    expect(without.has('crm_lookup')).toBe(false);
    expect(without.has('set_role')).toBe(true);

    state.failing = false;
    const back = await registry.toolsFor(null, (name) => failures.push(name));
    expect(back.has('crm_lookup')).toBe(true);
    expect(failures).toHaveLength(1);
  });

  it('calls a tool for a dispatcher by name, listing again for a tool added since, and refuses an unknown one', async () => {
    const { remote, state, descriptor } = remoteHost('mcp:crm');
    const registry = new ToolRegistry([host, remote], policy);
    await registry.toolsFor(null);
    state.tools = [descriptor('crm_lookup')];
    // Not offered to the no-role set, but the role was checked when the call was made: the call goes through.
    expect(await registry.call('crm_lookup', {}, ctx)).toEqual({ content: 'mcp:crm ran crm_lookup', isError: false });
    expect(await registry.call('find_cargoes', {}, ctx)).toMatchObject({ content: 'find_cargoes ran', isError: false });
    expect(await registry.call('teleport', {}, ctx)).toEqual({ content: 'Unknown tool teleport.', isError: true });
    expect(state.calls).toEqual(['crm_lookup']);
  });

  it('refuses a tool outside the no-role list without naming a role', async () => {
    const tools = await new ToolRegistry([host], policy).toolsFor(null);
    expect(await tools.call('cargo_add', {}, ctx)).toEqual({ content: 'Tool cargo_add is not available.', isError: true });
  });

  it('diagnoses a host that cannot list and a no-role tool nobody provides; lists the roles; closes every host', async () => {
    const { remote, state } = remoteHost('mcp:crm');
    state.failing = true;
    const registry = new ToolRegistry([host, remote], {
      roles: { client: { tools: ['set_role'] }, admin: { tools: [] } },
      withoutRole: ['set_role', 'signup'],
    });
    expect(await registry.diagnose()).toEqual([
      'Tool host mcp:crm cannot list its tools: connection refused',
      'roles.withoutRole allows tool "signup", but no tool host provides it',
    ]);
    expect(registry.roleNames).toEqual(['client', 'admin']);
    await registry.close(); // a host failing to close does not stop the others
    expect(state.closed).toBe(1);
  });
});
