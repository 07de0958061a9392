import { randomUUID } from 'node:crypto';
import type { ModelInputItem } from '../../domain/ports/model-provider.js';

/** One request the scripted server received, normalised the same way for both APIs. */
export interface ScriptedCall {
  readonly api: 'chat' | 'responses';
  readonly model: string;
  /** System text: Chat `system`/`developer` messages, or Responses `instructions` plus such messages, joined. */
  readonly instructions: string;
  /** The conversation items of THIS request (system messages excluded; they are in `instructions`). */
  readonly messages: readonly ModelInputItem[];
  /**
   * The whole conversation the server knows: for Chat the same as `messages`; for Responses the items of the
   * `previous_response_id` chain (inputs and outputs) followed by `messages`.
   */
  readonly history: readonly ModelInputItem[];
  /** Names of the function tools offered. */
  readonly toolNames: readonly string[];
  /** `server_label`s of the hosted MCP tools offered (Responses only). */
  readonly hostedMcpLabels: readonly string[];
  readonly previousResponseId?: string;
  readonly stream: boolean;
  /** Request headers, lower-cased names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The structured output asked for (Chat `response_format`, Responses `text.format`), if any. */
  readonly output?: { readonly name: string; readonly schema: Readonly<Record<string, unknown>> };
  /** The raw JSON body, for asserting wire details. */
  readonly body: Readonly<Record<string, unknown>>;
}

export interface ScriptedToolCall {
  readonly name: string;
  /** An object is sent as JSON; a string is sent as is (use it to send malformed JSON). */
  readonly arguments: Readonly<Record<string, unknown>> | string;
  /** Defaults to a fresh `call_…` id. */
  readonly callId?: string;
}

export interface ScriptedHostedMcpCall {
  readonly serverLabel: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>> | string;
  readonly output: string;
  /** The call failed at the server: reported as the item's `error`. */
  readonly error?: string;
}

/** What the model "says". An empty reply answers with empty text. */
export interface ScriptedReply {
  readonly text?: string;
  readonly toolCalls?: readonly ScriptedToolCall[];
  /** Responses only: calls the provider pretends to have made to hosted MCP servers. */
  readonly hostedMcpCalls?: readonly ScriptedHostedMcpCall[];
  /** Token counts to report; by default a rough word count. `cached`: of `input`, those read from the prompt cache. */
  readonly usage?: { readonly input: number; readonly output: number; readonly cached?: number };
  /** Wait this long before answering (use it to provoke client timeouts). */
  readonly delayMs?: number;
  /** Omit `usage` from the answer, as some local servers do. */
  readonly omitUsage?: boolean;
  /**
   * Streamed answers: send the SSE events one at a time, this many ms apart, as a model writes while it thinks
   * (default: the whole stream in one write).
   */
  readonly streamGapMs?: number;
  /** Streamed Chat Completions only: send this many SSE events, then drop the connection (a broken stream). */
  readonly cutStreamAfterEvents?: number;
  /** Respond with an HTTP error instead. */
  readonly error?: {
    readonly status: number;
    readonly message: string;
    readonly code?: string;
    /** Sent as `retry-after-ms`, which the SDK honours; keeps retry tests fast. */
    readonly retryAfterMs?: number;
  };
}

export type ModelScript = (call: ScriptedCall) => ScriptedReply | Promise<ScriptedReply>;

/**
 * Replies in order, one per call; the last one repeats.
 *
 * @example
 * sequenceScript([{ toolCalls: [{ name: 'lookup', arguments: { id: 1 } }] }, { text: 'Found it.' }])
 */
export function sequenceScript(replies: readonly ScriptedReply[]): ModelScript {
  if (replies.length === 0) throw new Error('sequenceScript needs at least one reply.');
  let next = 0;
  return () => {
    const reply = replies[Math.min(next, replies.length - 1)] as ScriptedReply;
    next += 1;
    return reply;
  };
}

/** A reply with fixed text, for the simplest tests. */
export function textScript(text: string): ModelScript {
  return () => ({ text });
}

/** Tool call with its arguments as wire text and a definite id. */
export interface RenderedToolCall {
  readonly callId: string;
  readonly name: string;
  readonly arguments: string;
}

export function renderToolCalls(reply: ScriptedReply): RenderedToolCall[] {
  return (reply.toolCalls ?? []).map((call) => ({
    callId: call.callId ?? newId('call'),
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
}

/** The usage to report: the script's, or roughly one token per word. */
export function replyUsage(
  call: ScriptedCall,
  reply: ScriptedReply,
  toolCalls: readonly RenderedToolCall[],
): { input: number; output: number; cached?: number } {
  if (reply.usage) return reply.usage;
  let input = countWords(call.instructions);
  for (const item of call.messages) input += countWords(item.type === 'tool_call' ? item.arguments : item.type === 'tool_result' ? item.output : item.content);
  let output = countWords(reply.text ?? '');
  for (const toolCall of toolCalls) output += countWords(toolCall.arguments) + 1;
  return { input: Math.max(1, input), output: Math.max(1, output) };
}

/** `{ output }` from a JSON-schema format object of either API (`{ name, schema, strict }`), or nothing. */
export function structuredOutput(format: unknown): { output?: NonNullable<ScriptedCall['output']> } {
  if (!format || typeof format !== 'object') return {};
  const { name, schema } = format as Record<string, unknown>;
  if (typeof name !== 'string' || !schema || typeof schema !== 'object') return {};
  return { output: { name, schema: schema as Record<string, unknown> } };
}

export function countWords(text: string): number {
  const words = text.match(/[\p{L}\p{N}]+/gu);
  return words ? words.length : 0;
}

export function newId(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/** Text of a content field that may be a string or an array of `{ type, text }` parts. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: unknown) => (part && typeof part === 'object' && 'text' in part && typeof part.text === 'string' ? part.text : '')).join('');
}

/** Splits text into word-sized stream fragments ("Hello", " world"). */
export function fragments(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}
