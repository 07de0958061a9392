import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { ConfigError } from '../../domain/errors.js';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import type { ModelScript, ScriptedCall, ScriptedReply } from './scripted-model.js';

/**
 * One rule of the scripted model (`model.script`): when the person's message matches `when`, answer `reply`, or call
 * `tool` with `arguments` and then answer `reply` from its result.
 */
const ruleSchema = z
  .strictObject({
    /** A regular expression, matched case-insensitively against the person's last message. */
    when: z.string().min(1),
    /**
     * The reply text; `{{text}}`, `{{result}}` (the tool's output) and the named groups of `when` are filled in
     * (`{{day | lower}}`: in lower case).
     */
    reply: z.string().optional(),
    /** A tool to call first; the reply then follows its result (default reply: the result itself). */
    tool: z.string().min(1).optional(),
    /** The tool's arguments; string values are filled in like `reply`. */
    arguments: z.record(z.string(), z.unknown()).default({}),
  })
  .refine((rule) => rule.reply !== undefined || rule.tool !== undefined, { message: 'a rule needs reply, tool or both' });

const rulesFileSchema = z.strictObject({
  rules: z.array(ruleSchema).default([]),
  /** The reply when no rule matches; default `{{text}}` (the person's message, echoed). */
  otherwise: z.string().default('{{text}}'),
});

/** The rules of a scripted model, as read from its file. */
export type ReplyRules = z.output<typeof rulesFileSchema>;

/** No file: the model echoes what the person wrote. */
export const ECHO_RULES: ReplyRules = { rules: [], otherwise: '{{text}}' };

/**
 * Reads a rules file (YAML, or JSON for `.json`) and checks it: its shape, and that every `when` is a valid regular
 * expression.
 * @throws ConfigError naming the file and each problem.
 */
export function loadReplyRules(file: string): ReplyRules {
  let parsed: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    parsed = file.endsWith('.json') ? JSON.parse(text) : (createRequire(import.meta.url)('yaml') as { parse: (text: string) => unknown }).parse(text);
  } catch (error) {
    throw new ConfigError(
      `Cannot read the scripted model's rules ${file} (model.script): ${(error as Error).message}`,
      [{ path: 'model.script', message: 'unreadable' }],
      {
        cause: error,
      },
    );
  }
  const result = rulesFileSchema.safeParse(parsed ?? {});
  const issues = result.success ? [] : result.error.issues.map((issue) => ({ path: issue.path.join('.') || '(root)', message: issue.message }));
  const written = (parsed as { rules?: unknown } | null)?.rules;
  for (const [index, rule] of (Array.isArray(written) ? written : []).entries()) {
    const when: unknown = (rule as { when?: unknown } | null)?.when;
    if (typeof when !== 'string') continue;
    try {
      new RegExp(when, 'iu');
    } catch (error) {
      issues.push({ path: `rules.${index}.when`, message: (error as Error).message });
    }
  }
  if (!result.success || issues.length > 0) {
    const lines = issues.map((issue) => `  - ${issue.path}: ${issue.message}`).join('\n');
    throw new ConfigError(`Invalid rules in ${file} (model.script):\n${lines}`, issues);
  }
  return result.data;
}

/**
 * The script that plays the model from `rules`: the first rule whose `when` matches the person's last message
 * decides. A rule with a tool calls it (when the turn offers it), then answers from its result; no rule matching
 * answers `otherwise`. Deterministic: the same message gets the same answer.
 */
export function ruleScript(rules: ReplyRules): ModelScript {
  const compiled = rules.rules.map((rule) => ({ ...rule, pattern: new RegExp(rule.when, 'iu') }));
  return (call: ScriptedCall): ScriptedReply => {
    const { text, since } = lastPersonMessage(call.history);
    const results = since.flatMap((item) => (item.type === 'tool_result' ? [item.output] : []));
    for (const rule of compiled) {
      const match = rule.pattern.exec(text);
      if (!match) continue;
      const fill = (template: string) => fillIn(template, { ...match.groups, text, result: results.join('\n') });
      if (rule.tool === undefined || results.length > 0) return { text: fill(rule.reply ?? '{{result}}') };
      if (!call.toolNames.includes(rule.tool)) {
        return { text: `(scripted model) The rule for "${rule.when}" calls ${rule.tool}, which is not offered here: check roles.definitions.` };
      }
      return { toolCalls: [{ name: rule.tool, arguments: fillArguments(rule.arguments, fill) }] };
    }
    return { text: fillIn(rules.otherwise, { text, result: results.join('\n') }) };
  };
}

/** The person's last message and the items after it (this turn's tool calls and results). */
function lastPersonMessage(items: readonly ModelInputItem[]): { text: string; since: readonly ModelInputItem[] } {
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index];
    if (item?.type === 'message' && item.role === 'user') return { text: item.content, since: items.slice(index + 1) };
  }
  return { text: '', since: items };
}

/**
 * `{{name}}` → its value, `{{name | lower}}` in lower case (a tool's enum of lower-case words, matched without
 * regard to case); a placeholder without a value is left as written, so a typo shows in the reply.
 */
function fillIn(template: string, values: Readonly<Record<string, string | undefined>>): string {
  return template.replace(/\{\{\s*([\w-]+)\s*(\|\s*lower\s*)?\}\}/g, (placeholder, name: string, lower: string | undefined) => {
    const value = values[name];
    return value === undefined ? placeholder : lower ? value.toLowerCase() : value;
  });
}

function fillArguments(value: unknown, fill: (template: string) => string): Record<string, unknown> {
  const walk = (item: unknown): unknown => {
    if (typeof item === 'string') return fill(item);
    if (Array.isArray(item)) return item.map(walk);
    if (item && typeof item === 'object') return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, walk(inner)]));
    return item;
  };
  return walk(value) as Record<string, unknown>;
}
