import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAIChatProvider, toChatMessages } from '../../src/models/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { endpoint, lookupTool, user, userSays } from './helpers.js';

describe('toChatMessages', () => {
  it('puts instructions first and merges consecutive tool calls into one assistant message', () => {
    expect(
      toChatMessages('Be brief.', [
        user('Find 1 and 2'),
        { type: 'message', role: 'assistant', content: 'Checking.' },
        { type: 'tool_call', callId: 'a', name: 'lookup', arguments: '{"id":1}' },
        { type: 'tool_call', callId: 'b', name: 'lookup', arguments: '{"id":2}' },
        { type: 'tool_result', callId: 'a', output: 'one' },
        { type: 'tool_result', callId: 'b', output: 'two' },
        { type: 'tool_call', callId: 'c', name: 'lookup', arguments: '{"id":3}' },
        { type: 'tool_result', callId: 'c', output: 'three' },
      ]),
    ).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Find 1 and 2' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'a', type: 'function', function: { name: 'lookup', arguments: '{"id":1}' } },
          { id: 'b', type: 'function', function: { name: 'lookup', arguments: '{"id":2}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'a', content: 'one' },
      { role: 'tool', tool_call_id: 'b', content: 'two' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: '{"id":3}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'three' },
    ]);
  });

  it('omits the system message when there are no instructions', () => {
    expect(toChatMessages('', [user('Hi')])).toEqual([{ role: 'user', content: 'Hi' }]);
  });
});

describe('OpenAIChatProvider', () => {
  let server: ScriptedModelServer;
  const model = () => new OpenAIChatProvider(endpoint(server.baseUrl));

  beforeAll(async () => {
    server = await startScriptedModelServer({ script: () => ({ text: 'ok' }) });
  });
  afterAll(() => server.close());

  it('sends only Chat Completions parameters, tools as functions, and asks for usage when streaming', async () => {
    await model().complete(userSays('Hi', { tools: [lookupTool], onTextDelta: () => {} }));
    const body = server.calls.at(-1)!.body;
    expect(Object.keys(body).sort()).toEqual(['messages', 'model', 'stream', 'stream_options', 'tools']);
    expect(body['stream_options']).toEqual({ include_usage: true });
    expect(body['tools']).toEqual([{ type: 'function', function: { name: 'lookup', description: lookupTool.description, parameters: lookupTool.parameters } }]);
  });

  it('reads cached prompt tokens, within the input, streamed or not', async () => {
    server.setScript(() => ({ text: 'ok', usage: { input: 900, cached: 512, output: 7 } }));
    const expected = { inputTokens: 900, outputTokens: 7, cachedInputTokens: 512 };
    expect((await model().complete(userSays('Hi'))).usage).toEqual(expected);
    expect((await model().complete(userSays('Hi', { onTextDelta: () => {} }))).usage).toEqual(expected);
    server.setScript(() => ({ text: 'ok', usage: { input: 9, output: 7 } }));
    expect((await model().complete(userSays('Hi'))).usage).toEqual({ inputTokens: 9, outputTokens: 7 });
    server.setScript(() => ({ text: 'ok' }));
  });

  it('has no response chains and no hosted MCP', () => {
    expect(model().capabilities).toEqual({ responseChains: false, hostedMcp: false });
    expect(model().kind).toBe('openai-chat');
  });

  it("serves a stream the SDK's own chat stream helper accumulates", async () => {
    server.setScript(() => ({ text: 'Hi there', toolCalls: [{ name: 'lookup', arguments: { id: 3 }, callId: 'call_3' }] }));
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: 'x', maxRetries: 0 });
    const stream = client.chat.completions.stream({
      model: 'scripted-model',
      messages: [{ role: 'user', content: 'Hi' }],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe('Hi there');
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({ id: 'call_3', function: { name: 'lookup', arguments: '{"id":3}' } });
    expect(final.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('streams a paced reply word by word, whole, and tells when the request came and its first words left', async () => {
    const timings: { receivedAt: number; firstByteAt: number }[] = [];
    const paced = await startScriptedModelServer({
      script: () => ({ text: 'One two three', streamGapMs: 1 }),
      onAnswered: (_call, timing) => timings.push(timing),
    });
    try {
      const deltas: string[] = [];
      const before = performance.now();
      const response = await new OpenAIChatProvider(endpoint(paced.baseUrl)).complete(userSays('Hi', { onTextDelta: (delta) => deltas.push(delta) }));
      expect(response.text).toBe('One two three');
      expect(deltas).toEqual(['One', ' two', ' three']);
      expect(timings).toHaveLength(1);
      expect(timings[0]!.receivedAt).toBeGreaterThanOrEqual(before);
      expect(timings[0]!.firstByteAt).toBeGreaterThanOrEqual(timings[0]!.receivedAt);
    } finally {
      await paced.close();
    }
  });

  it('lists models on GET /v1/models', async () => {
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: 'x', maxRetries: 0 });
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(['scripted-model']);
  });
});
