import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/palaver-harness.js';

// Seed 004 sets LLM_MAX_TOKENS and LLM_TOP_P per request. In Palaver they are `maxOutputTokens` and `topP` of a model
// in the config: each model (the primary, its fallback) sends its own, or inherits the primary's.

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('a model’s maxOutputTokens and topP from the config', () => {
  for (const provider of ['openai-chat', 'openai-responses'] as const) {
    it(`reach the endpoint with the turn’s call (${provider})`, async () => {
      harness = await createHarness(() => ({ text: 'Добрий день!' }));
      const palaver = await harness.start({ model: { provider, maxOutputTokens: 512, topP: 0.8 } });
      expect((await palaver.chat({ userId: 'oksana', text: 'Привіт' })).text).toBe('Добрий день!');
      const call = harness.model.calls[0]!;
      expect(call.body['top_p']).toBe(0.8);
      expect(call.body[provider === 'openai-chat' ? 'max_completion_tokens' : 'max_output_tokens']).toBe(512);
    });
  }

  it('are sent by a fallback as its own where it sets them, else as the primary’s', async () => {
    harness = await createHarness((call) => (call.model === 'scripted' ? { error: { status: 400, message: 'refused' } } : { text: 'Backup answer.' }));
    const palaver = await harness.start({ model: { maxOutputTokens: 512, topP: 0.8, fallback: { name: 'backup', topP: 0.5 } } });
    expect((await palaver.chat({ userId: 'oksana', text: 'Привіт' })).text).toBe('Backup answer.');
    expect(harness.model.calls.map((call) => [call.model, call.body['top_p'], call.body['max_completion_tokens']])).toEqual([
      ['scripted', 0.8, 512],
      ['backup', 0.5, 512],
    ]);
  });

  it('refuses a topP outside (0, 1] at start, naming the setting', async () => {
    harness = await createHarness(() => ({ text: 'never' }));
    await expect(harness.start({ model: { topP: 1.5 } })).rejects.toThrow(/model\.topP/);
  });
});
