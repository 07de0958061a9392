import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelError } from '../../src/domain/errors.js';
import { createModelProvider, FallbackProvider, OpenAIChatProvider, OpenAIResponsesProvider } from '../../src/models/index.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { deadPort, endpoint, userSays } from './helpers.js';

describe('FallbackProvider', () => {
  let primary: ScriptedModelServer;
  let backup: ScriptedModelServer;

  beforeAll(async () => {
    primary = await startScriptedModelServer({ script: () => ({ text: 'primary' }) });
    backup = await startScriptedModelServer({ script: () => ({ text: 'from the fallback' }) });
  });
  afterAll(async () => {
    await primary.close();
    await backup.close();
  });

  const fallbackPair = (onFallback?: (error: ModelError) => void) =>
    new FallbackProvider(
      new OpenAIResponsesProvider(endpoint(primary.baseUrl, { provider: 'openai-responses', name: 'big-model' })),
      new OpenAIChatProvider(endpoint(backup.baseUrl, { name: 'small-model' })),
      onFallback ? { onFallback } : {},
    );

  it('answers from the primary when it works, unmarked', async () => {
    primary.setScript(() => ({ text: 'primary' }));
    const reply = await fallbackPair().complete(userSays('Hi'));
    expect(reply).toMatchObject({ text: 'primary', model: 'big-model' });
    expect(reply.fallback).toBeUndefined();
  });

  it('uses the fallback when the primary fails, marks the reply and reports the error', async () => {
    primary.setScript(() => ({ error: { status: 500, message: 'down' } }));
    const seen: ModelError[] = [];
    const reply = await fallbackPair((error) => seen.push(error)).complete(userSays('Hi'));
    expect(reply).toMatchObject({ text: 'from the fallback', model: 'small-model', fallback: true });
    expect(seen.map((e) => e.failure)).toEqual(['unreachable']);
  });

  it('drops previousResponseId and hostedMcp for a fallback that lacks them', async () => {
    primary.setScript(() => ({ text: 'first' }));
    const first = await fallbackPair().complete(userSays('Hi'));
    primary.setScript(() => ({ error: { status: 400, message: 'refused' } }));
    const reply = await fallbackPair().complete(
      userSays('Again', {
        previousResponseId: first.responseId!,
        hostedMcp: [{ serverLabel: 'w', serverUrl: 'https://mcp.example', requireApproval: 'never' }],
      }),
    );
    expect(reply.fallback).toBe(true);
    const call = backup.calls.at(-1)!;
    expect(call.body['previous_response_id']).toBeUndefined();
    expect(call.body['tools']).toBeUndefined();
  });

  it('does not fall back on a stale chain: the caller resends without it', async () => {
    primary.setScript(() => ({ text: 'ok' }));
    const before = backup.calls.length;
    await expect(fallbackPair().complete(userSays('Hi', { previousResponseId: 'resp_missing' }))).rejects.toMatchObject({ failure: 'stale_chain' });
    expect(backup.calls.length).toBe(before);
  });

  it("rejects with the fallback's error, its cause the primary's, when both fail", async () => {
    primary.setScript(() => ({ error: { status: 500, message: 'primary down' } }));
    backup.setScript(() => ({ error: { status: 400, message: 'fallback refused' } }));
    try {
      const error = await fallbackPair().complete(userSays('Hi')).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ failure: 'refused', model: 'small-model', status: 400 });
      expect((error as ModelError).cause).toMatchObject({ failure: 'unreachable', model: 'big-model' });
    } finally {
      backup.setScript(() => ({ text: 'from the fallback' }));
    }
  });

  it('does not fall back when the caller aborted', async () => {
    primary.setScript(() => ({ text: 'slow', delayMs: 1_000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const before = backup.calls.length;
    await expect(fallbackPair().complete(userSays('Hi', { signal: controller.signal }))).rejects.toMatchObject({ model: 'big-model' });
    expect(backup.calls.length).toBe(before);
  });

  it('is built by createModelProvider, the fallback inheriting provider, baseUrl and apiKey', async () => {
    const port = await deadPort();
    const model = createModelProvider({
      ...endpoint(`http://127.0.0.1:${port}/v1`, { name: 'unreachable-model', apiKey: 'sk-shared' }),
      fallback: { name: 'small-model', baseUrl: backup.baseUrl, timeoutMs: 2_000, maxRetries: 0 },
    });
    expect(model.kind).toBe('fallback(openai-chat)');
    const reply = await model.complete(userSays('Hi'));
    expect(reply).toMatchObject({ fallback: true, model: 'small-model', text: 'from the fallback' });
    const call = backup.calls.at(-1)!;
    expect(call.api).toBe('chat');
    expect(call.headers['authorization']).toBe('Bearer sk-shared');
  });

  it('createModelProvider builds a bare provider when no fallback is configured', () => {
    expect(createModelProvider(endpoint('http://127.0.0.1:1/v1', { provider: 'openai-responses' })).kind).toBe('openai-responses');
  });
});
