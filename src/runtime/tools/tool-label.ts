import { lookup } from 'bcp-47-match';
import type { ToolLabel } from '../../domain/ports/tool-host.js';
import { systemText } from '../../i18n/index.js';

/**
 * The progress line people see while a tool runs, in `language`: the tool's own label (a per-language label by
 * RFC 4647 lookup, `uk-UA` → `uk`), else Palaver's generic "Working on it…" in that language. A per-language label
 * without the person's language gives the generic text too, rather than a line in a language they may not read.
 */
export function toolProgressLabel(label: ToolLabel | undefined, language: string): string {
  if (typeof label === 'string') return label;
  if (label !== undefined) {
    const tag = lookup(Object.keys(label), language.replaceAll('_', '-'));
    const text = tag === undefined ? undefined : label[tag];
    if (text !== undefined) return text;
  }
  return systemText(language, 'turn.toolWorking');
}
