import type { ModelInputItem, ModelRequest } from '../domain/ports/model-provider.js';

/**
 * The most tokens a request's prompt can take, counted from above without a tokenizer: a byte-level BPE token (the
 * GPT, Claude, Llama and Grok families) covers at least one UTF-8 byte, so a text has at most as many tokens as
 * bytes. Each input item and tool adds its framing (role, separators, the function header the endpoint renders).
 * Meant for reserving money before a call, where a bound that never falls short matters and ~4x too much for English
 * does not; `domain/token-estimate.ts` is the close estimate used to trim history.
 */
export function promptTokensAtMost(request: Pick<ModelRequest, 'instructions' | 'input' | 'tools' | 'hostedMcp' | 'output'>): number {
  const items = request.input.length + request.tools.length + (request.hostedMcp?.length ?? 0);
  const bytes =
    Buffer.byteLength(request.instructions) +
    inputBytes(request.input) +
    Buffer.byteLength(JSON.stringify(request.tools)) +
    (request.hostedMcp === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.hostedMcp))) +
    (request.output === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.output)));
  return PROMPT_FRAMING_TOKENS + items * ITEM_FRAMING_TOKENS + bytes;
}

/** The tokens of input items alone (a Responses chain's earlier items, kept by the provider). */
export function inputTokensAtMost(input: readonly ModelInputItem[]): number {
  return input.length * ITEM_FRAMING_TOKENS + inputBytes(input);
}

function inputBytes(input: readonly ModelInputItem[]): number {
  let bytes = 0;
  for (const item of input) {
    switch (item.type) {
      case 'message':
        bytes += Buffer.byteLength(item.content);
        break;
      case 'tool_call':
        bytes += Buffer.byteLength(item.name) + Buffer.byteLength(item.arguments) + Buffer.byteLength(item.callId);
        break;
      case 'tool_result':
        bytes += Buffer.byteLength(item.output) + Buffer.byteLength(item.callId);
        break;
    }
  }
  return bytes;
}

/** Tokens a chat format spends around each message or tool (role, separators, a function's rendered header). */
const ITEM_FRAMING_TOKENS = 16;
/** Tokens around the whole prompt (system framing, the assistant's turn opening). */
const PROMPT_FRAMING_TOKENS = 64;
