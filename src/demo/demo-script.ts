import type { ModelInputItem } from '../domain/ports/model-provider.js';
import type { ModelScript, ScriptedCall } from '../models/scripted/scripted-model.js';

/**
 * A deterministic stand-in model for the bundled demo agent (local tools `current_time`, `save_note`, `list_notes`):
 * after a tool result it answers in words from that result; otherwise it picks a tool from the last user text, or
 * echoes the text with a hint to configure a real model. A tool is only called when the request offers it.
 */
export const demoScript: ModelScript = (call) => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: describeToolResult(call, last.callId, last.output) };

  const said = lastUserText(call.history);
  const offers = (name: string): boolean => call.toolNames.includes(name);
  const note = noteText(said);
  if (note !== undefined && /^\s*(remember|note:)/i.test(said) && offers('save_note')) {
    return { toolCalls: [{ name: 'save_note', arguments: { text: note } }] };
  }
  if (/\b(time|clock)\b/i.test(said) && offers('current_time')) return { toolCalls: [{ name: 'current_time', arguments: {} }] };
  if (note !== undefined && offers('save_note')) return { toolCalls: [{ name: 'save_note', arguments: { text: note } }] };
  if (/\b(notes|list)\b/i.test(said) && offers('list_notes')) return { toolCalls: [{ name: 'list_notes', arguments: {} }] };
  return {
    text: `(scripted reply) You said: «${said.trim()}». Point Palaver at a real model with PALAVER_LLM_BASE_URL and PALAVER_MODEL.`,
  };
};

function lastUserText(items: readonly ModelInputItem[]): string {
  for (let i = items.length - 1; i >= 0; i -= 1) {
    const item = items[i];
    if (item?.type === 'message' && item.role === 'user') return item.content;
  }
  return '';
}

/** The text after "remember (that)" or "note:", or undefined when neither appears. */
function noteText(said: string): string | undefined {
  const match = /\b(?:remember(?:\s+that)?|note)\b\s*:?\s*(.*)$/is.exec(said);
  if (!match) return undefined;
  const rest = (match[1] ?? '').trim();
  return rest || said.trim();
}

function describeToolResult(call: ScriptedCall, callId: string, output: string): string {
  const toolCall = call.history.find((item): item is Extract<ModelInputItem, { type: 'tool_call' }> => item.type === 'tool_call' && item.callId === callId);
  const value = parseJson(output);
  switch (toolCall?.name) {
    case 'current_time':
      return `It is ${pickText(value, ['local', 'time', 'now', 'datetime', 'iso']) ?? output} where you are.`;
    case 'save_note': {
      const args = parseJson(toolCall.arguments);
      return `Saved your note: ${pickText(args, ['text']) ?? pickText(value, ['text', 'note']) ?? output}`;
    }
    case 'list_notes': {
      const notes = listOf(value);
      if (notes && notes.length === 0) return 'You have no notes yet.';
      return `Your notes: ${notes ? notes.join('; ') : output}`;
    }
    default:
      return `Done: ${output}`;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A readable string from a tool's JSON output: the value itself, or the first of `keys` that holds a string. */
function pickText(value: unknown, keys: readonly string[]): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    for (const key of keys) {
      const field = (value as Record<string, unknown>)[key];
      if (typeof field === 'string' && field) return field;
    }
  }
  return undefined;
}

/** Notes as strings from `["a", "b"]`, `[{ text }]` or `{ notes: [...] }`. */
function listOf(value: unknown): string[] | undefined {
  const list = Array.isArray(value)
    ? value
    : value && typeof value === 'object' && Array.isArray((value as Record<string, unknown>)['notes'])
      ? ((value as Record<string, unknown>)['notes'] as unknown[])
      : undefined;
  return list?.map((entry) => pickText(entry, ['text', 'note', 'content']) ?? JSON.stringify(entry));
}
