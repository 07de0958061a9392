import type { ModelToolSpec } from '../../domain/ports/model-provider.js';
import type { ApprovalRequirement } from '../../domain/approval.js';
import type { ApprovalContext, ToolCallContext, ToolDescriptor, ToolHost, ToolLabel, ToolResult } from '../../domain/ports/tool-host.js';
import { approvalRequirement } from './approval-requirement.js';

/** Which tools each role may use. With no roles defined, every tool is offered. */
export interface RolePolicy {
  readonly roles: Readonly<Record<string, { readonly tools: readonly string[] }>>;
  /** Tools offered while the user has no role yet. */
  readonly withoutRole: readonly string[];
}

/** The tools offered to one model call. */
export interface ToolSet {
  readonly specs: readonly ModelToolSpec[];
  has(name: string): boolean;
  call(name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext): Promise<ToolResult>;
}

/**
 * Gathers the tools of all hosts and filters them by role. A name offered by two hosts goes to the first
 * host listed (local before MCP), and the clash is reported by `diagnose`.
 */
export class ToolRegistry {
  readonly #hosts: readonly ToolHost[];
  readonly #policy: RolePolicy;
  /** The last tool set built per role, with the host lists it was built from (hosts hand back the same list until it changes). */
  /** Every tool of every host, as last listed, for `call`. */
  #offered: ReadonlyMap<string, { descriptor: ToolDescriptor; host: ToolHost }> = new Map();
  readonly #sets = new Map<string | null, { readonly lists: readonly (readonly ToolDescriptor[])[]; readonly set: ToolSet }>();

  constructor(hosts: readonly ToolHost[], policy: RolePolicy = { roles: {}, withoutRole: [] }) {
    this.#hosts = hosts;
    this.#policy = policy;
  }

  get roleNames(): readonly string[] {
    return Object.keys(this.#policy.roles);
  }

  /**
   * Tools for `role` (`null`: no role yet). A host that cannot list its tools is skipped, not fatal. While no host's
   * list changes, the same set (and the same specs) comes back, so providers can keep what they derive from it.
   */
  async toolsFor(role: string | null, onHostError?: (host: string, error: unknown) => void): Promise<ToolSet> {
    const listed = await Promise.allSettled(this.#hosts.map((host) => host.list()));
    listed.forEach((outcome, index) => {
      if (outcome.status === 'rejected') onHostError?.(this.#hosts[index]!.name, outcome.reason);
    });
    const lists = listed.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : NOT_LISTED));
    const cached = this.#sets.get(role);
    if (cached && cached.lists.every((list, index) => list === lists[index])) return cached.set;
    const all = this.#merge(listed);
    this.#offered = all;
    const set = this.#build(role, all);
    this.#sets.set(role, { lists, set });
    return set;
  }

  #build(role: string | null, all: ReadonlyMap<string, { descriptor: ToolDescriptor; host: ToolHost }>): ToolSet {
    const allowed = this.allowedFor(role);
    const offered = new Map<string, { descriptor: ToolDescriptor; host: ToolHost }>();
    for (const [name, entry] of all) if (!allowed || allowed.has(name)) offered.set(name, entry);
    const specs = [...offered.values()].map(({ descriptor }) => ({
      name: descriptor.name,
      description: descriptor.description,
      parameters: descriptor.parameters,
    }));
    return {
      specs,
      has: (name) => offered.has(name),
      call: async (name, args, ctx) => {
        const entry = offered.get(name);
        // A tool outside the role's allowlist is refused even if the model names it.
        if (!entry) return { content: `Tool ${name} is not available${role ? ` to role ${role}` : ''}.`, isError: true };
        return entry.host.call(name, args, ctx);
      },
    };
  }

  /**
   * Calls `name` on the host that offers it, whatever the role: the role was checked when the call was made
   * (`ToolSet.has`), and a dispatcher in another process has no role policy of its own to apply.
   */
  async call(name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext): Promise<ToolResult> {
    let entry = this.#offered.get(name);
    if (!entry) {
      this.#offered = await this.#gather();
      entry = this.#offered.get(name);
    }
    if (!entry) return { content: `Unknown tool ${name}.`, isError: true };
    return entry.host.call(name, args, ctx);
  }

  /**
   * Whether a call of `tool` may move the person into `role` (the role tool's argument, or a role a result's effects
   * name): only into a configured role whose allowlist names that tool, so a tool offered to clients cannot make
   * anyone `admin`, and a forged or buggy result cannot set a role nobody configured. With no roles defined, roles
   * restrict nothing and any is taken.
   */
  mayGrantRole(tool: string, role: string): boolean {
    if (Object.keys(this.#policy.roles).length === 0) return true;
    return Object.hasOwn(this.#policy.roles, role) && this.#policy.roles[role]!.tools.includes(tool);
  }

  /** Whether the tool `name` only reads, as its host last listed it (see `LocalTool.readOnly`). */
  isReadOnly(name: string): boolean {
    return this.#offered.get(name)?.descriptor.readOnly === true;
  }

  /**
   * Whether a call of `name` with `args` waits for someone's approval, and what they are shown (see
   * `approvalRequirement`); undefined: it runs at once.
   */
  approvalOf(name: string, args: Readonly<Record<string, unknown>>, ctx: ApprovalContext): ApprovalRequirement | undefined {
    const descriptor = this.#offered.get(name)?.descriptor;
    return descriptor === undefined ? undefined : approvalRequirement(descriptor, args, ctx);
  }

  /** The label of the tool `name` as its host last listed it, if it has one. */
  labelOf(name: string): ToolLabel | undefined {
    return this.#offered.get(name)?.descriptor.label;
  }

  /**
   * Problems worth a warning at start-up and in `palaver doctor`. `providedElsewhere`: tools no host lists but
   * something else may offer (a hosted MCP server, which the model provider lists itself).
   */
  async diagnose(providedElsewhere: (tool: string) => boolean = () => false): Promise<string[]> {
    const problems: string[] = [];
    const all = await this.#gather((host, error) => problems.push(`Tool host ${host} cannot list its tools: ${errorMessage(error)}`), problems);
    const named = [
      ...Object.entries(this.#policy.roles).flatMap(([role, { tools }]) => tools.map((tool) => ({ where: `role ${role}`, tool }))),
      ...this.#policy.withoutRole.map((tool) => ({ where: 'roles.withoutRole', tool })),
    ];
    for (const { where, tool } of named) {
      if (!all.has(tool) && !providedElsewhere(tool)) problems.push(`${where} allows tool "${tool}", but no tool host provides it`);
    }
    return problems;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#hosts.map((host) => host.close()));
  }

  /**
   * The tool names `role` may use (`null`: no role yet), across local, MCP and hosted MCP tools; undefined when no
   * roles are defined (every tool is offered).
   */
  allowedFor(role: string | null): ReadonlySet<string> | undefined {
    if (Object.keys(this.#policy.roles).length === 0) return undefined;
    if (role === null) return new Set(this.#policy.withoutRole);
    const definition = this.#policy.roles[role];
    // An unknown role (e.g. removed from config) falls back to the no-role tools rather than to everything.
    return new Set([...(definition?.tools ?? this.#policy.withoutRole)]);
  }

  async #gather(onHostError?: (host: string, error: unknown) => void, clashes?: string[]) {
    return this.#merge(await Promise.allSettled(this.#hosts.map((host) => host.list())), onHostError, clashes);
  }

  #merge(listed: readonly PromiseSettledResult<readonly ToolDescriptor[]>[], onHostError?: (host: string, error: unknown) => void, clashes?: string[]) {
    const all = new Map<string, { descriptor: ToolDescriptor; host: ToolHost }>();
    listed.forEach((outcome, index) => {
      const host = this.#hosts[index]!;
      if (outcome.status === 'rejected') {
        onHostError?.(host.name, outcome.reason);
        return;
      }
      for (const descriptor of outcome.value) {
        const existing = all.get(descriptor.name);
        if (existing) {
          clashes?.push(`Tool "${descriptor.name}" is offered by ${existing.host.name} and ${host.name}; ${existing.host.name} wins`);
          continue;
        }
        all.set(descriptor.name, { descriptor, host });
      }
    });
    return all;
  }
}

/** Stands for a host whose list failed, so a set built without it is rebuilt once the host answers again. */
const NOT_LISTED: readonly ToolDescriptor[] = [];

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
