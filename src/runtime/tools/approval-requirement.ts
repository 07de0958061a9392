import { type ApprovalRequirement, MAX_APPROVAL_SUMMARY_CHARS } from '../../domain/approval.js';
import type { ApprovalContext, ToolDescriptor } from '../../domain/ports/tool-host.js';

/** Longest argument value quoted in a default summary. */
const MAX_QUOTED_VALUE_CHARS = 120;

/**
 * Whether a call of the tool `descriptor` waits for someone's yes, and what they are shown. A rule that throws
 * asks the person (failing closed: a broken rule never lets a call through unasked); a `describe` that throws or
 * returns nothing usable gives way to the default: the tool's name and its arguments, each value quoted and cut.
 * The summary never holds control characters and is cut to {@link MAX_APPROVAL_SUMMARY_CHARS}.
 */
export function approvalRequirement(
  descriptor: Pick<ToolDescriptor, 'name' | 'approval' | 'describe'>,
  args: Readonly<Record<string, unknown>>,
  ctx: ApprovalContext,
): ApprovalRequirement | undefined {
  if (descriptor.approval === undefined) return undefined;
  let by: ApprovalRequirement['by'] | undefined;
  try {
    by = descriptor.approval(args, ctx);
  } catch {
    by = 'person';
  }
  if (by === undefined) return undefined;
  return { by: by === 'operator' ? 'operator' : 'person', summary: summaryOf(descriptor, args) };
}

function summaryOf(descriptor: Pick<ToolDescriptor, 'name' | 'describe'>, args: Readonly<Record<string, unknown>>): string {
  let described: unknown;
  try {
    described = descriptor.describe?.(args);
  } catch {
    described = undefined;
  }
  const text = typeof described === 'string' && described.trim() !== '' ? described : defaultSummary(descriptor.name, args);
  return cut(clean(text), MAX_APPROVAL_SUMMARY_CHARS);
}

/** `cancel_appointment: appointment_id "a-17", notify true`: the tool and what it was given, nothing more. */
function defaultSummary(name: string, args: Readonly<Record<string, unknown>>): string {
  const entries = Object.entries(args).map(([key, value]) => `${key} ${cut(JSON.stringify(value) ?? 'null', MAX_QUOTED_VALUE_CHARS)}`);
  return entries.length === 0 ? name : `${name}: ${entries.join(', ')}`;
}

/** Control characters (but line breaks) go: what is shown is what the text says. */
function clean(text: string): string {
  return text.replace(/[\u0000-\u0009\u000B-\u001F\u007F\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, '').trim();
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
