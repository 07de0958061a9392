import type { PalaverConfig } from '../../config/schema.js';
import { ECHO_RULES, loadReplyRules, ruleScript } from './reply-rules.js';
import { startScriptedModelServer } from './scripted-model-server.js';

/** The built-in offline model of `model.provider: "scripted"`, running in this process. */
export interface OfflineModel {
  /** The model config Palaver runs on: an OpenAI-compatible endpoint on loopback, no key, free. */
  readonly model: PalaverConfig['model'];
  /** Stops its server. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts the scripted model `model.provider: "scripted"` names: the rules of `model.script` (see `reply-rules.ts`),
 * or an echo without one, served by the same OpenAI-compatible server the demo and the tests use, on a free
 * loopback port. Palaver then calls it as any Chat Completions endpoint — HTTP, streaming, tool calls — so what
 * runs offline is the path a real model takes. It needs no key and costs nothing (priced at 0).
 * @throws ConfigError when the rules file cannot be read or is invalid.
 */
export async function startOfflineModel(model: PalaverConfig['model']): Promise<OfflineModel> {
  const rules = model.script === undefined ? ECHO_RULES : loadReplyRules(model.script);
  const server = await startScriptedModelServer({ script: ruleScript(rules), models: [model.name], maxRecordedCalls: 0 });
  const free = { input: '0', output: '0' };
  return {
    model: {
      ...model,
      provider: 'openai-chat',
      baseUrl: server.baseUrl,
      apiKey: undefined,
      prices: { [model.name]: free, ...(model.fallback ? { [model.fallback.name]: free } : {}), ...model.prices },
    },
    close: () => server.close(),
  };
}
