/**
 * The Responses API wire format of the scripted model server: request → `ScriptedCall`, reply → `response` object or
 * the SSE event sequence the `openai` SDK's stream helpers accept. Pure functions plus a bounded in-memory chain
 * store for `previous_response_id`.
 */
import type { ModelInputItem } from '../../domain/ports/model-provider.js';
import { contentText, fragments, newId, renderToolCalls, replyUsage, structuredOutput, type ScriptedCall, type ScriptedReply } from './scripted-model.js';

type Json = Record<string, unknown>;

/**
 * Remembers each stored response's conversation so a later `previous_response_id` can continue it. Bounded: the
 * oldest entries go first, so a long benchmark cannot grow memory without limit (a forgotten id answers 400, as an
 * expired one does at OpenAI).
 */
export class ResponseChainStore {
  readonly #chains = new Map<string, readonly ModelInputItem[]>();

  constructor(private readonly limit = 10_000) {}

  get(id: string): readonly ModelInputItem[] | undefined {
    return this.#chains.get(id);
  }

  set(id: string, items: readonly ModelInputItem[]): void {
    if (this.#chains.size >= this.limit) {
      const oldest = this.#chains.keys().next();
      if (!oldest.done) this.#chains.delete(oldest.value);
    }
    this.#chains.set(id, items);
  }

  delete(id: string): boolean {
    return this.#chains.delete(id);
  }
}

/** The 400 body OpenAI sends for an unknown `previous_response_id`. */
export function previousResponseNotFound(id: string): Json {
  return {
    error: {
      message: `Previous response with id '${id}' not found.`,
      type: 'invalid_request_error',
      code: 'previous_response_not_found',
      param: 'previous_response_id',
    },
  };
}

export function parseResponsesRequest(body: Json, headers: Record<string, string>, chain: readonly ModelInputItem[]): ScriptedCall {
  const instructions: string[] = typeof body['instructions'] === 'string' && body['instructions'] ? [body['instructions']] : [];
  const messages: ModelInputItem[] = [];
  const input = body['input'];
  const items: unknown[] = typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : Array.isArray(input) ? input : [];
  for (const raw of items) {
    const item = raw as Json;
    const type = item['type'] ?? 'message';
    if (type === 'message') {
      const role = item['role'];
      const content = contentText(item['content']);
      if (role === 'system' || role === 'developer') instructions.push(content);
      else if (role === 'user' || role === 'assistant') messages.push({ type: 'message', role, content });
    } else if (type === 'function_call') {
      messages.push({ type: 'tool_call', callId: String(item['call_id'] ?? ''), name: String(item['name'] ?? ''), arguments: String(item['arguments'] ?? '') });
    } else if (type === 'function_call_output') {
      const output = item['output'];
      messages.push({ type: 'tool_result', callId: String(item['call_id'] ?? ''), output: typeof output === 'string' ? output : contentText(output) });
    }
  }
  const tools = (Array.isArray(body['tools']) ? body['tools'] : []) as Json[];
  const previousResponseId = typeof body['previous_response_id'] === 'string' ? body['previous_response_id'] : undefined;
  return {
    api: 'responses',
    model: String(body['model'] ?? ''),
    instructions: instructions.join('\n\n'),
    messages,
    history: [...chain, ...messages],
    toolNames: tools.filter((tool) => tool['type'] === 'function').map((tool) => String(tool['name'] ?? '')),
    hostedMcpLabels: tools.filter((tool) => tool['type'] === 'mcp').map((tool) => String(tool['server_label'] ?? '')),
    ...(previousResponseId ? { previousResponseId } : {}),
    stream: body['stream'] === true,
    ...structuredOutput(((body['text'] ?? {}) as Json)['format']),
    headers,
    body,
  };
}

/** A finished reply in both shapes: the `response` object and the items to remember for the chain. */
export interface RenderedResponse {
  readonly response: Json;
  readonly chainItems: readonly ModelInputItem[];
}

export function renderResponse(call: ScriptedCall, reply: ScriptedReply): RenderedResponse {
  const toolCalls = renderToolCalls(reply);
  const usage = replyUsage(call, reply, toolCalls);
  const output: Json[] = [];
  // Hosted MCP calls happen inside the provider before it answers, so they come first.
  for (const mcp of reply.hostedMcpCalls ?? []) {
    output.push({
      id: newId('mcp'),
      type: 'mcp_call',
      server_label: mcp.serverLabel,
      name: mcp.name,
      arguments: typeof mcp.arguments === 'string' ? mcp.arguments : JSON.stringify(mcp.arguments),
      output: mcp.error === undefined ? mcp.output : null,
      error: mcp.error ?? null,
      status: 'completed',
    });
  }
  if (reply.text) {
    output.push({
      id: newId('msg'),
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [], logprobs: [] }],
    });
  }
  for (const c of toolCalls) {
    output.push({ id: newId('fc'), type: 'function_call', call_id: c.callId, name: c.name, arguments: c.arguments, status: 'completed' });
  }
  const response: Json = {
    id: newId('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    model: call.model,
    output,
    error: null,
    incomplete_details: null,
    instructions: call.body['instructions'] ?? null,
    metadata: {},
    parallel_tool_calls: true,
    previous_response_id: call.previousResponseId ?? null,
    store: call.body['store'] !== false,
    temperature: call.body['temperature'] ?? null,
    tool_choice: 'auto',
    tools: call.body['tools'] ?? [],
    top_p: null,
    usage: reply.omitUsage
      ? null
      : {
          input_tokens: usage.input,
          input_tokens_details: { cached_tokens: usage.cached ?? 0 },
          output_tokens: usage.output,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.input + usage.output,
        },
  };
  const chainItems: ModelInputItem[] = [...call.history];
  if (reply.text) chainItems.push({ type: 'message', role: 'assistant', content: reply.text });
  for (const c of toolCalls) chainItems.push({ type: 'tool_call', callId: c.callId, name: c.name, arguments: c.arguments });
  return { response, chainItems };
}

/**
 * The streamed form of `response`: `response.created`, `response.in_progress`, then per output item
 * `output_item.added` → (content part + text deltas | argument deltas) → `output_item.done`, then `response.completed`.
 */
export function responseStream(response: Json): string {
  let sequence = 0;
  let out = '';
  const emit = (type: string, fields: Json): void => {
    out += `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`;
  };
  const pending = { ...response, status: 'in_progress', output: [], usage: null };
  emit('response.created', { response: pending });
  emit('response.in_progress', { response: pending });
  (response['output'] as Json[]).forEach((item, outputIndex) => {
    const itemId = item['id'];
    if (item['type'] === 'message') {
      const part = (item['content'] as Json[])[0] as Json;
      const text = String(part['text']);
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', content: [] } });
      emit('response.content_part.added', { output_index: outputIndex, item_id: itemId, content_index: 0, part: { ...part, text: '' } });
      for (const delta of fragments(text)) {
        emit('response.output_text.delta', { output_index: outputIndex, item_id: itemId, content_index: 0, delta, logprobs: [] });
      }
      emit('response.output_text.done', { output_index: outputIndex, item_id: itemId, content_index: 0, text, logprobs: [] });
      emit('response.content_part.done', { output_index: outputIndex, item_id: itemId, content_index: 0, part });
    } else if (item['type'] === 'function_call') {
      const args = String(item['arguments']);
      emit('response.output_item.added', { output_index: outputIndex, item: { ...item, status: 'in_progress', arguments: '' } });
      const half = Math.ceil(args.length / 2);
      for (const delta of [args.slice(0, half), args.slice(half)]) {
        if (delta) emit('response.function_call_arguments.delta', { output_index: outputIndex, item_id: itemId, delta });
      }
      emit('response.function_call_arguments.done', { output_index: outputIndex, item_id: itemId, name: item['name'], arguments: args });
    } else {
      emit('response.output_item.added', { output_index: outputIndex, item });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  emit('response.completed', { response });
  return out;
}
