import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ToolCallCompleted } from './wire.js';

/**
 * Signs tool results with `tools.resultSecret` (HMAC-SHA256), so a runtime uses only results a worker holding the
 * secret made, not ones anyone with write access to Redis put on its response stream.
 *
 * What is signed binds the result to its call: the ids that route it, the tool, the bound user and the arguments (as
 * the runtime sent them), and the result itself (content, structured content, error flag, effects), in a canonical
 * encoding (JSON with object keys sorted, at every depth). `durationMs` and `workerId` are for logs only and not
 * signed. A worker signs only what it made itself, never a result read back from Redis.
 */
export interface SignedCall {
  readonly correlationId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly userId: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

type SignedResult = Pick<ToolCallCompleted, 'content' | 'structured' | 'isError' | 'effects'>;

/** The signature (64 hex characters) of `result` as the answer to `call`. */
export function resultSignature(secret: string, call: SignedCall, result: SignedResult): string {
  const signed = {
    v: 1,
    call: { correlationId: call.correlationId, toolCallId: call.toolCallId, toolName: call.toolName, userId: call.userId, arguments: call.arguments },
    result: { content: result.content, structured: result.structured, isError: result.isError, effects: result.effects },
  };
  return createHmac('sha256', secret).update(canonicalJson(signed)).digest('hex');
}

/** `completed` carries the signature `secret` makes for it as the answer to `call` (compared in constant time). */
export function hasValidSignature(secret: string, call: SignedCall, completed: ToolCallCompleted): boolean {
  if (completed.signature === undefined) return false;
  const expected = Buffer.from(resultSignature(secret, call, completed), 'hex');
  const given = Buffer.from(completed.signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** JSON with object keys sorted at every depth; `undefined` members are left out, as JSON.stringify does. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
