/**
 * The Chat Completions wire format of the scripted model server: request → `ScriptedCall`, reply → JSON or SSE.
 * Pure functions; the server only moves bytes.
 */
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import { contentText, fragments, newId, renderToolCalls, replyUsage, structuredOutput, type ScriptedCall, type ScriptedReply } from './scripted-model.js';

type Json = Record<string, unknown>;

export function parseChatRequest(body: Json, headers: Record<string, string>): ScriptedCall {
  const instructions: string[] = [];
  const messages: ModelInputItem[] = [];
  for (const raw of asArray(body['messages'])) {
    const message = raw as Json;
    const role = message['role'];
    if (role === 'system' || role === 'developer') {
      instructions.push(contentText(message['content']));
    } else if (role === 'user') {
      messages.push({ type: 'message', role: 'user', content: contentText(message['content']) });
    } else if (role === 'assistant') {
      const text = contentText(message['content']);
      if (text) messages.push({ type: 'message', role: 'assistant', content: text });
      for (const call of asArray(message['tool_calls']) as Json[]) {
        const fn = (call['function'] ?? {}) as Json;
        messages.push({ type: 'tool_call', callId: String(call['id'] ?? ''), name: String(fn['name'] ?? ''), arguments: String(fn['arguments'] ?? '') });
      }
    } else if (role === 'tool') {
      messages.push({ type: 'tool_result', callId: String(message['tool_call_id'] ?? ''), output: contentText(message['content']) });
    }
  }
  const toolNames = (asArray(body['tools']) as Json[]).map((tool) => String(((tool['function'] ?? {}) as Json)['name'] ?? ''));
  return {
    api: 'chat',
    model: String(body['model'] ?? ''),
    instructions: instructions.join('\n\n'),
    messages,
    history: messages,
    toolNames,
    hostedMcpLabels: [],
    stream: body['stream'] === true,
    ...structuredOutput(((body['response_format'] ?? {}) as Json)['json_schema']),
    headers,
    body,
  };
}

/** The non-streaming `chat.completion` body. */
export function chatCompletionBody(call: ScriptedCall, reply: ScriptedReply): Json {
  const toolCalls = renderToolCalls(reply);
  const usage = replyUsage(call, reply, toolCalls);
  return {
    id: newId('chatcmpl'),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: call.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? (toolCalls.length > 0 ? null : ''),
          refusal: null,
          ...(toolCalls.length > 0
            ? { tool_calls: toolCalls.map((c) => ({ id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } })) }
            : {}),
        },
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    ...(reply.omitUsage ? {} : { usage: chatUsage(usage) }),
  };
}

/** The SSE body of a streamed completion: role, text fragments, tool call fragments, finish, usage, `[DONE]`. */
export function chatCompletionStream(call: ScriptedCall, reply: ScriptedReply): string {
  const toolCalls = renderToolCalls(reply);
  const usage = replyUsage(call, reply, toolCalls);
  const id = newId('chatcmpl');
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Json, finishReason: string | null = null): string =>
    sse({ id, object: 'chat.completion.chunk', created, model: call.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });

  let out = chunk({ role: 'assistant', content: '' });
  for (const piece of fragments(reply.text ?? '')) out += chunk({ content: piece });
  toolCalls.forEach((c, index) => {
    // Like OpenAI: the first fragment names the call, the arguments follow in pieces.
    out += chunk({ tool_calls: [{ index, id: c.callId, type: 'function', function: { name: c.name, arguments: '' } }] });
    const half = Math.ceil(c.arguments.length / 2);
    for (const part of [c.arguments.slice(0, half), c.arguments.slice(half)]) {
      if (part) out += chunk({ tool_calls: [{ index, function: { arguments: part } }] });
    }
  });
  out += chunk({}, toolCalls.length > 0 ? 'tool_calls' : 'stop');
  const streamOptions = call.body['stream_options'] as Json | undefined;
  if (streamOptions?.['include_usage'] === true && !reply.omitUsage) {
    out += sse({
      id,
      object: 'chat.completion.chunk',
      created,
      model: call.model,
      choices: [],
      usage: chatUsage(usage),
    });
  }
  return `${out}data: [DONE]\n\n`;
}

function sse(data: Json): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Chat Completions usage, with the cached prompt tokens when the script gives them. */
function chatUsage(usage: { input: number; output: number; cached?: number }): Json {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } }),
  };
}
