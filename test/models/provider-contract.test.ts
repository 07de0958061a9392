import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from '../../src/domain/errors.js';
import { createEndpointProvider } from '../../src/models/index.js';
import { sequenceScript, startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { deadPort, endpoint, lookupTool, PROVIDERS, user, userSays } from './helpers.js';

/** What every OpenAI-wire provider must do, run against the real scripted server over HTTP. */
describe.each(PROVIDERS)('%s provider', (provider) => {
  let server: ScriptedModelServer;
  const model = (overrides: Parameters<typeof endpoint>[1] = {}) => createEndpointProvider(endpoint(server.baseUrl, { provider, ...overrides }));

  beforeAll(async () => {
    server = await startScriptedModelServer({ script: () => ({ text: 'unused' }) });
  });
  afterAll(() => server.close());

  for (const streaming of [false, true]) {
    describe(streaming ? 'streaming' : 'not streaming', () => {
      const withDeltas = (deltas: string[]) => (streaming ? { onTextDelta: (d: string) => deltas.push(d) } : {});

      it('returns the text and the usage the server reported', async () => {
        server.setScript(() => ({ text: 'Hello there, friend.', usage: { input: 12, output: 4 } }));
        const deltas: string[] = [];
        const reply = await model().complete(userSays('Hi', withDeltas(deltas)));
        expect(reply.text).toBe('Hello there, friend.');
        expect(reply.usage).toEqual({ inputTokens: 12, outputTokens: 4 });
        expect(reply.model).toBe('scripted-model');
        expect(reply.toolCalls).toEqual([]);
        if (streaming) expect(deltas.join('')).toBe('Hello there, friend.');
        if (streaming) expect(deltas.length).toBeGreaterThan(1);
        const call = server.calls.at(-1)!;
        expect(call.api).toBe(provider === 'openai-chat' ? 'chat' : 'responses');
        expect(call.stream).toBe(streaming);
        expect(call.instructions).toBe('You are a test agent.');
        expect(call.messages).toEqual([user('Hi')]);
      });

      it("asks for structured output in the API's own shape and returns the JSON text", async () => {
        const schema = { type: 'object', properties: { reply: { type: 'string' } }, required: ['reply'], additionalProperties: false };
        server.setScript((call) => ({ text: call.output ? JSON.stringify({ reply: `as ${call.output.name}` }) : 'free text' }));
        const deltas: string[] = [];
        const reply = await model().complete(userSays('Hi', { output: { name: 'organization', schema }, ...withDeltas(deltas) }));
        expect(JSON.parse(reply.text)).toEqual({ reply: 'as organization' });
        const call = server.calls.at(-1)!;
        expect(call.output).toEqual({ name: 'organization', schema });
        const wire = provider === 'openai-chat' ? call.body['response_format'] : call.body['text'];
        expect(wire).toEqual(
          provider === 'openai-chat'
            ? { type: 'json_schema', json_schema: { name: 'organization', schema, strict: true } }
            : { format: { type: 'json_schema', name: 'organization', schema, strict: true } },
        );
        if (streaming) expect(deltas.join('')).toBe(reply.text);
      });

      it('returns several tool calls from one reply, then sends their results back in one round trip', async () => {
        server.setScript(
          sequenceScript([
            {
              text: 'Let me check.',
              toolCalls: [
                { name: 'lookup', arguments: { id: 1 }, callId: 'call_a' },
                { name: 'lookup', arguments: { id: 2 }, callId: 'call_b' },
              ],
            },
            { text: 'Both found.' },
          ]),
        );
        const first = await model().complete(userSays('Find 1 and 2', { tools: [lookupTool], ...withDeltas([]) }));
        expect(first.toolCalls).toEqual([
          { callId: 'call_a', name: 'lookup', arguments: '{"id":1}' },
          { callId: 'call_b', name: 'lookup', arguments: '{"id":2}' },
        ]);
        expect(server.calls.at(-1)!.toolNames).toEqual(['lookup']);

        const followUp = [
          ...first.toolCalls.map((c) => ({ type: 'tool_call' as const, ...c })),
          { type: 'tool_result' as const, callId: 'call_a', output: 'record 1' },
          { type: 'tool_result' as const, callId: 'call_b', output: 'record 2' },
        ];
        const second = await model().complete({
          instructions: 'You are a test agent.',
          tools: [lookupTool],
          input: [user('Find 1 and 2'), { type: 'message', role: 'assistant', content: first.text }, ...followUp],
          ...withDeltas([]),
        });
        expect(second.text).toBe('Both found.');
        expect(server.calls.at(-1)!.messages).toEqual([user('Find 1 and 2'), { type: 'message', role: 'assistant', content: 'Let me check.' }, ...followUp]);
      });
    });
  }

  it('reports zero usage when the server sends none', async () => {
    server.setScript(() => ({ text: 'ok', omitUsage: true }));
    expect((await model().complete(userSays('Hi'))).usage).toEqual({ inputTokens: 0, outputTokens: 0 });
    expect((await model().complete(userSays('Hi', { onTextDelta: () => {} }))).usage).toEqual({ inputTokens: 0, outputTokens: 0 });
  });

  it('sends the correlation id as x-correlation-id and the configured temperature, top-p and output limit', async () => {
    server.setScript(() => ({ text: 'ok' }));
    await model({ temperature: 0.3, topP: 0.9, maxOutputTokens: 700 }).complete(userSays('Hi', { correlationId: 'corr-123' }));
    const call = server.calls.at(-1)!;
    expect(call.headers['x-correlation-id']).toBe('corr-123');
    expect(call.body['temperature']).toBe(0.3);
    expect(call.body['top_p']).toBe(0.9);
    expect(call.body[provider === 'openai-chat' ? 'max_completion_tokens' : 'max_output_tokens']).toBe(700);
    // Unset, neither is sent: the endpoint's own defaults apply.
    await model().complete(userSays('Hi'));
    expect(Object.keys(server.calls.at(-1)!.body)).not.toContain('top_p');
  });

  it('sends no key at all when none is configured (never a made-up one), and the configured one otherwise', async () => {
    server.setScript(() => ({ text: 'ok' }));
    await model().complete(userSays('Hi'));
    expect(server.calls.at(-1)!.headers['authorization']).toBeUndefined();
    await model({ apiKey: 'sk-configured' }).complete(userSays('Hi'));
    expect(server.calls.at(-1)!.headers['authorization']).toBe('Bearer sk-configured');
  });

  it('retries a 500 and succeeds on the next attempt', async () => {
    server.setScript(sequenceScript([{ error: { status: 500, message: 'boom', retryAfterMs: 5 } }, { text: 'recovered' }]));
    const before = server.calls.length;
    const reply = await model({ maxRetries: 1 }).complete(userSays('Hi'));
    expect(reply.text).toBe('recovered');
    expect(server.calls.length - before).toBe(2);
  });

  it('rejects as unreachable when 500s outlast maxRetries', async () => {
    server.setScript(() => ({ error: { status: 503, message: 'overloaded', retryAfterMs: 5 } }));
    const before = server.calls.length;
    const error = await model({ maxRetries: 1 })
      .complete(userSays('Hi'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ failure: 'unreachable', status: 503, retryable: true, model: 'scripted-model' });
    expect(server.calls.length - before).toBe(2);
  });

  it('rejects a 429 as unreachable', async () => {
    server.setScript(() => ({ error: { status: 429, message: 'slow down', retryAfterMs: 5 } }));
    await expect(model().complete(userSays('Hi'))).rejects.toMatchObject({ failure: 'unreachable', status: 429 });
  });

  it('rejects a 400 as refused without retrying', async () => {
    server.setScript(() => ({ error: { status: 400, message: 'bad tool schema', retryAfterMs: 5 } }));
    const before = server.calls.length;
    const error = await model({ maxRetries: 2 })
      .complete(userSays('Hi'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: 'refused', status: 400, retryable: false });
    expect((error as Error).message).toContain('bad tool schema');
    expect(server.calls.length - before).toBe(1);
  });

  it('rejects as unreachable when nothing listens on the port', async () => {
    const port = await deadPort();
    const provider_ = createEndpointProvider(endpoint(`http://127.0.0.1:${port}/v1`, { provider }));
    const error = await provider_.complete(userSays('Hi')).catch((e: unknown) => e);
    expect(error).toMatchObject({ failure: 'unreachable' });
    expect((error as Error).message).toContain('model.baseUrl');
  });

  it('rejects as unreachable when the server answers after timeoutMs', async () => {
    server.setScript(() => ({ text: 'too late', delayMs: 3_000 }));
    const started = Date.now();
    await expect(model({ timeoutMs: 150 }).complete(userSays('Hi'))).rejects.toMatchObject({ failure: 'unreachable' });
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('never puts the API key in the error message, even when the server echoes it', async () => {
    const guarded = await startScriptedModelServer({ script: () => ({ text: 'ok' }), apiKey: 'sk-right-key' });
    try {
      const secret = 'sk-wrong-secret-key-123';
      const error = await createEndpointProvider(endpoint(guarded.baseUrl, { provider, apiKey: secret }))
        .complete(userSays('Hi'))
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ failure: 'refused', status: 401 });
      expect((error as Error).message).not.toContain(secret);
      expect((error as Error).message).toContain('model.apiKey');
    } finally {
      await guarded.close();
    }
  });

  it('stops when the caller aborts', async () => {
    server.setScript(() => ({ text: 'slow', delayMs: 1_000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(model().complete(userSays('Hi', { signal: controller.signal }))).rejects.toBeInstanceOf(ModelError);
  });
});
