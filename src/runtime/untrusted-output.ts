import type { HostedToolCall, ModelResponse, ModelToolCall } from '../domain/ports/model-provider.js';
import type { ToolCallResult } from '../domain/ports/tool-dispatch.js';
import { toStorableJsonText, toStorableText } from '../domain/storable-text.js';
import { capToolResult, capToolText } from '../domain/tool-result-cap.js';
import type { ModelWrapper, ToolWrapper } from './call-wrappers.js';

/**
 * Model output and tool results are untrusted input: whatever a model or a tool host sends back is made storable on
 * every back end once, here, where it enters Palaver, before a flow, a tool, a log or the store sees it. Per field:
 * - reply text: NUL dropped (invisible to the person), lone surrogates replaced by U+FFFD;
 * - tool call names, call ids, arguments and results, hosted MCP calls: NUL and lone surrogates replaced by U+FFFD, so
 *   a change in data a program reads stays visible; in arguments (JSON text) also the `\u0000` and lone-surrogate
 *   escapes that `JSON.parse` would turn back into those characters;
 * - the model name and response id the provider reports (stored beside the reply): as tool data.
 *
 * Well-formed output passes through unchanged and uncopied. A tool result is also cut to `tools.maxResultChars`
 * here ({@link capToolResult}); other sizes are bounded elsewhere: the reply by the reply check
 * (`agent.maxReplyChars`), the streamed text by the turn's progress.
 */
export function storableModelOutput(maxToolResultChars: number): ModelWrapper {
  return async (invocation, next) => toStorableResponse(await next(invocation), maxToolResultChars);
}

/**
 * Tool results (local tools, MCP servers, tool hosts passed in, a Redis worker), whatever their source: cut to
 * `maxResultChars` with the notice the model reads ({@link capToolResult}), then made storable as
 * {@link storableModelOutput} says. Cut first, so an oversized result is never scanned or copied whole.
 */
export function storableToolResults(maxResultChars: number): ToolWrapper {
  return async (call, next) => {
    const result = capToolResult(await next(call), maxResultChars);
    const content = toStorableText(result.content, 'replace');
    return content === result.content ? result : { ...result, content };
  };
}

/**
 * A model response with every field that is stored or acted on made storable; the output of a hosted MCP call (a tool
 * result the provider fetched) cut to `maxToolResultChars` as every tool result is.
 */
export function toStorableResponse(response: ModelResponse, maxToolResultChars: number): ModelResponse {
  const data = (value: string) => toStorableText(value, 'replace');
  const toolCall = (call: ModelToolCall): ModelToolCall => ({
    callId: data(call.callId),
    name: data(call.name),
    arguments: toStorableJsonText(call.arguments),
  });
  const hosted = (call: HostedToolCall): HostedToolCall => ({
    serverLabel: data(call.serverLabel),
    name: data(call.name),
    arguments: toStorableJsonText(call.arguments),
    output: call.output === null ? null : data(capToolText(call.output, maxToolResultChars)),
    error: call.error === null ? null : data(call.error),
  });
  return {
    ...response,
    model: data(response.model),
    text: toStorableText(response.text, 'drop'),
    toolCalls: response.toolCalls.map(toolCall),
    ...(response.hostedToolCalls === undefined ? {} : { hostedToolCalls: response.hostedToolCalls.map(hosted) }),
    ...(response.responseId === undefined ? {} : { responseId: data(response.responseId) }),
  };
}
