import type { ToolResult } from '../../domain/ports/tool-host.js';
import { capToolResult } from '../../domain/tool-result-cap.js';

/**
 * An MCP `CallToolResult` (`content`, `structuredContent`, `isError`), or the 2024-10-07 protocol's
 * `{ toolResult }`. Typed loosely and read defensively: it comes from a remote server.
 */
export type McpCallResultLike = Readonly<Record<string, unknown>>;

/** One MCP content item (`text`, `image`, `audio`, `resource`, `resource_link`, or a future type). */
export interface McpContentLike {
  readonly type: string;
  readonly [key: string]: unknown;
}

/**
 * Turns an MCP tool result into the text the model reads. Text items are joined with newlines; other items become
 * short placeholders (`[image: image/png]`), embedded text resources keep their text. When there is no text but
 * `structuredContent`, its JSON becomes the content. Capped by the one rule for every tool result
 * ({@link capToolResult}): the content cut with a notice, structured content over the cap left out.
 */
export function mapCallResult(toolName: string, result: McpCallResultLike, maxChars: number): ToolResult {
  const isError = result['isError'] === true;
  const items: unknown[] = Array.isArray(result['content']) ? result['content'] : [];
  const structured = result['structuredContent'] ?? result['toolResult'];
  let content = items
    .filter((item): item is McpContentLike => typeof item === 'object' && item !== null && typeof (item as McpContentLike).type === 'string')
    .map(summariseContent)
    .filter((part) => part.length > 0)
    .join('\n');
  if (content.length === 0 && structured !== undefined) content = JSON.stringify(structured) ?? '';
  if (content.length === 0) {
    content = isError ? `Tool ${toolName} failed without a message` : '';
  }
  return capToolResult({ content, ...(structured === undefined ? {} : { structured }), isError }, maxChars);
}

/** A tool failure the model should read, e.g. a timeout or a refused argument. */
export function errorResult(message: string): ToolResult {
  return { content: message, isError: true };
}

function summariseContent(item: McpContentLike): string {
  switch (item.type) {
    case 'text':
      return asString(item['text']);
    case 'image':
    case 'audio':
      return `[${item.type}: ${asString(item['mimeType']) || 'unknown type'}]`;
    case 'resource': {
      const resource = (item['resource'] ?? {}) as Record<string, unknown>;
      const uri = asString(resource['uri']);
      const text = resource['text'];
      if (typeof text === 'string') return `[resource: ${uri}]\n${text}`;
      return `[resource: ${uri} (${asString(resource['mimeType']) || 'binary'})]`;
    }
    case 'resource_link':
      return `[resource link: ${asString(item['name'])} ${asString(item['uri'])}]`.replace(/\s+\]$/, ']');
    default:
      return `[${item.type}]`;
  }
}

function asString(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
