import { ToolError } from '../domain/errors.js';
import type { ToolCallContext, ToolDescriptor, ToolHost, ToolResult } from '../domain/ports/tool-host.js';
import { toolParameters, type LocalTool } from './define-tool.js';

/** Hosts tools declared with `defineTool`, in-process. */
export class LocalToolHost implements ToolHost {
  readonly name = 'local';
  readonly #tools: ReadonlyMap<string, LocalTool>;
  readonly #descriptors: readonly ToolDescriptor[];

  constructor(tools: readonly LocalTool[]) {
    const byName = new Map<string, LocalTool>();
    for (const tool of tools) {
      if (byName.has(tool.name)) throw new ToolError('tool_duplicate', tool.name, `Two local tools are named "${tool.name}"`);
      byName.set(tool.name, tool);
    }
    this.#tools = byName;
    // Schemas are computed once: generating JSON Schema on every turn would sit on the hot path.
    this.#descriptors = tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: toolParameters(tool.input),
      source: 'local',
      ...(tool.label === undefined ? {} : { label: tool.label }),
      ...(tool.readOnly === true ? { readOnly: true } : {}),
      ...approvalOf(tool),
    }));
  }

  async list(): Promise<readonly ToolDescriptor[]> {
    return this.#descriptors;
  }

  async call(name: string, args: Readonly<Record<string, unknown>>, ctx: ToolCallContext): Promise<ToolResult> {
    const tool = this.#tools.get(name);
    if (!tool) return { content: `Unknown tool ${name}`, isError: true };
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) {
      const reasons = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'arguments'}: ${issue.message}`);
      return { content: `Invalid arguments for ${name}: ${reasons.join('; ')}`, isError: true };
    }
    try {
      const value = await tool.run(parsed.data, ctx);
      return typeof value === 'string' ? { content: value, isError: false } : { content: JSON.stringify(value ?? null), structured: value, isError: false };
    } catch (error) {
      return { content: `${name} failed: ${error instanceof Error ? error.message : String(error)}`, isError: true };
    }
  }

  async close(): Promise<void> {}
}

/**
 * A tool's approval rule and description over raw arguments: both see the validated input. Arguments that do not
 * validate need no approval (the call fails before `run`, changing nothing), and a `describe` that throws falls back
 * to the default description.
 */
export function approvalOf(tool: LocalTool): Pick<ToolDescriptor, 'approval' | 'describe'> {
  const rule = tool.approval;
  if (rule === undefined) return {};
  const describe = tool.describe?.bind(tool);
  return {
    approval: (args, ctx) => {
      if (typeof rule === 'string') return rule;
      const parsed = tool.input.safeParse(args);
      return parsed.success ? rule(parsed.data, ctx) : undefined;
    },
    ...(describe === undefined
      ? {}
      : {
          describe: (args) => {
            const parsed = tool.input.safeParse(args);
            if (!parsed.success) throw new TypeError(`invalid arguments for ${tool.name}`);
            return describe(parsed.data);
          },
        }),
  };
}
