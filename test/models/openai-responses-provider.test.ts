import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIResponsesProvider } from '../../src/models/index.js';
import { sequenceScript, startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { endpoint, lookupTool, user, userSays } from './helpers.js';

describe('OpenAIResponsesProvider', () => {
  let server: ScriptedModelServer;
  const model = () => new OpenAIResponsesProvider(endpoint(server.baseUrl, { provider: 'openai-responses' }));

  beforeAll(async () => {
    server = await startScriptedModelServer({ script: () => ({ text: 'unused' }) });
  });
  afterAll(() => server.close());

  it('continues a chain with previousResponseId, sending only the new items', async () => {
    server.setScript(sequenceScript([{ toolCalls: [{ name: 'lookup', arguments: { id: 7 }, callId: 'call_7' }] }, { text: 'Record 7 is blue.' }]));
    const first = await model().complete(userSays('What is 7?', { tools: [lookupTool] }));
    expect(first.responseId).toMatch(/^resp_/);
    expect(first.toolCalls).toEqual([{ callId: 'call_7', name: 'lookup', arguments: '{"id":7}' }]);

    const second = await model().complete({
      instructions: 'You are a test agent.',
      tools: [lookupTool],
      previousResponseId: first.responseId!,
      input: [{ type: 'tool_result', callId: 'call_7', output: 'blue' }],
    });
    expect(second.text).toBe('Record 7 is blue.');
    const call = server.calls.at(-1)!;
    expect(call.previousResponseId).toBe(first.responseId);
    expect(call.messages).toEqual([{ type: 'tool_result', callId: 'call_7', output: 'blue' }]);
    // The server rebuilt the whole conversation from the chain.
    expect(call.history).toEqual([
      user('What is 7?'),
      { type: 'tool_call', callId: 'call_7', name: 'lookup', arguments: '{"id":7}' },
      { type: 'tool_result', callId: 'call_7', output: 'blue' },
    ]);
  });

  it('rejects an unknown previousResponseId as stale_chain', async () => {
    server.setScript(() => ({ text: 'ok' }));
    const error = await model()
      .complete(userSays('Hi', { previousResponseId: 'resp_gone' }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: 'stale_chain', status: 400 });
  });

  it('also maps a 404 whose message mentions the previous response to stale_chain', async () => {
    server.setScript(() => ({ error: { status: 404, message: 'The previous response could not be found.' } }));
    await expect(model().complete(userSays('Hi'))).rejects.toMatchObject({ failure: 'stale_chain', status: 404 });
    server.setScript(() => ({ error: { status: 404, message: 'Model not found.' } }));
    await expect(model().complete(userSays('Hi'))).rejects.toMatchObject({ failure: 'refused', status: 404 });
  });

  it('treats a forgotten response as stale, and store: false responses as never stored', async () => {
    server.setScript(() => ({ text: 'ok' }));
    const kept = await model().complete(userSays('Hi'));
    server.forgetResponse(kept.responseId!);
    await expect(model().complete(userSays('Again', { previousResponseId: kept.responseId! }))).rejects.toMatchObject({ failure: 'stale_chain' });

    const unstored = await model().complete(userSays('Hi', { store: false }));
    expect(server.calls.at(-1)!.body['store']).toBe(false);
    await expect(model().complete(userSays('Again', { previousResponseId: unstored.responseId! }))).rejects.toMatchObject({ failure: 'stale_chain' });
  });

  it('offers hosted MCP servers as mcp tools and reads their calls back', async () => {
    server.setScript(() => ({
      text: 'The weather is sunny.',
      hostedMcpCalls: [{ serverLabel: 'weather', name: 'forecast', arguments: { city: 'Oslo' }, output: 'sunny' }],
    }));
    for (const onTextDelta of [undefined, () => {}]) {
      const reply = await model().complete(
        userSays('Weather?', {
          tools: [lookupTool],
          hostedMcp: [
            {
              serverLabel: 'weather',
              serverUrl: 'https://mcp.example/sse',
              headers: { authorization: 'Bearer x' },
              allowedTools: ['forecast'],
              requireApproval: 'never',
            },
          ],
          ...(onTextDelta ? { onTextDelta } : {}),
        }),
      );
      expect(reply.text).toBe('The weather is sunny.');
      expect(reply.hostedToolCalls).toEqual([{ serverLabel: 'weather', name: 'forecast', arguments: '{"city":"Oslo"}', output: 'sunny', error: null }]);
    }
    const call = server.calls.at(-1)!;
    expect(call.hostedMcpLabels).toEqual(['weather']);
    expect(call.body['tools']).toEqual([
      { type: 'function', name: 'lookup', description: lookupTool.description, parameters: lookupTool.parameters, strict: false },
      {
        type: 'mcp',
        server_label: 'weather',
        server_url: 'https://mcp.example/sse',
        require_approval: 'never',
        headers: { authorization: 'Bearer x' },
        allowed_tools: ['forecast'],
      },
    ]);
  });

  it('sends instructions as `instructions` and items in Responses shape', async () => {
    server.setScript(() => ({ text: 'ok' }));
    await model().complete({
      instructions: 'Be brief.',
      tools: [],
      input: [user('Hi'), { type: 'tool_call', callId: 'c1', name: 'lookup', arguments: '{}' }, { type: 'tool_result', callId: 'c1', output: 'x' }],
    });
    const body = server.calls.at(-1)!.body;
    expect(body['instructions']).toBe('Be brief.');
    expect(body['input']).toEqual([
      { type: 'message', role: 'user', content: 'Hi' },
      { type: 'function_call', call_id: 'c1', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: 'x' },
    ]);
  });

  it("serves a stream the SDK's own stream helper accumulates", async () => {
    server.setScript(() => ({ text: 'Hi there', toolCalls: [{ name: 'lookup', arguments: { id: 3 }, callId: 'call_3' }] }));
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: 'x', maxRetries: 0 });
    const stream = client.responses.stream({ model: 'scripted-model', input: 'Hi' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe('Hi there');
    expect(deltas.join('')).toBe('Hi there');
    expect(final.output.find((item) => item.type === 'function_call')).toMatchObject({ call_id: 'call_3', arguments: '{"id":3}' });
  });
});
