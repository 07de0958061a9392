import type { HostedMcpSpec, HostedToolCall } from '../../domain/ports/model-provider.js';

/**
 * The hosted MCP servers a role is offered: each server's `allowedTools` narrowed to the role's allowlist
 * (`allowed`; undefined when no roles are defined, and then every server goes as configured). A server with its own
 * `allowedTools` keeps only the names the role allows too; one without gets the role's whole list (the provider
 * ignores names its server does not have). A server the role may use nothing of is left out, so the model never sees it.
 */
export function hostedMcpForRole(specs: readonly HostedMcpSpec[], allowed: ReadonlySet<string> | undefined): HostedMcpSpec[] {
  if (allowed === undefined) return [...specs];
  const offered: HostedMcpSpec[] = [];
  for (const spec of specs) {
    const names = spec.allowedTools ? spec.allowedTools.filter((name) => allowed.has(name)) : [...allowed];
    if (names.length > 0) offered.push({ ...spec, allowedTools: names });
  }
  return offered;
}

export interface HostedRoleRule {
  /** `roles.setRoleTool`: the tool whose successful call sets the role. */
  readonly setRoleTool: string;
  /** `roles.roleArgument`: its argument that names the role. */
  readonly roleArgument: string;
  /** The hosted servers offered to the role the call was made under (`hostedMcpForRole`). */
  readonly offered: readonly HostedMcpSpec[];
  /** `ToolRegistry.mayGrantRole`: the rule local calls are held to. */
  mayGrantRole(tool: string, role: string): boolean;
  /** Told about a role change that was asked for and refused. */
  onRefused(call: HostedToolCall, reason: string): void;
}

/**
 * The role a hosted call of the role tool moved the person into, the last one that counts: the call succeeded (no
 * `error`), it came from a server offered to the role and allowed that tool (what the model provider reports is model
 * output, untrusted), its arguments are a JSON object naming a role, and that role is one the tool may grant.
 */
export function roleFromHostedCalls(calls: readonly HostedToolCall[], rule: HostedRoleRule): string | undefined {
  let role: string | undefined;
  for (const call of calls) {
    if (call.name !== rule.setRoleTool || call.error !== null) continue;
    const server = rule.offered.find((spec) => spec.serverLabel === call.serverLabel);
    if (server === undefined || (server.allowedTools !== undefined && !server.allowedTools.includes(call.name))) {
      rule.onRefused(call, 'the call came from a server or tool not offered to the role');
      continue;
    }
    const requested = roleArgument(call.arguments, rule.roleArgument);
    if (requested === undefined) {
      rule.onRefused(call, `its arguments name no role under "${rule.roleArgument}"`);
      continue;
    }
    if (!rule.mayGrantRole(call.name, requested)) {
      rule.onRefused(call, `role "${requested}" is not one this tool may grant`);
      continue;
    }
    role = requested;
  }
  return role;
}

function roleArgument(text: string, name: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const value = (parsed as Record<string, unknown>)[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}
