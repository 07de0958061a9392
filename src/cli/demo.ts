import { join } from 'node:path';
import type { PalaverConfigInput } from '../config/index.js';
import { createDemoTools } from '../demo/demo-tools.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { demoScript, startScriptedModelServer, type ScriptedModelServer } from '../testing/index.js';
import type { LocalTool } from '../tools/define-tool.js';

/** The bundled demo: its scripted model server, config overrides and tools. */
export interface Demo {
  readonly server: ScriptedModelServer;
  readonly overrides: PalaverConfigInput;
  readonly tools: LocalTool[];
  readonly banner: string;
}

export async function startDemo(timeZone: string): Promise<Demo> {
  const server = await startScriptedModelServer({ script: demoScript });
  return {
    server,
    overrides: {
      agent: { name: 'Palaver demo', instructionsDir: join(PACKAGE_ROOT, 'examples', 'demo', 'instructions') },
      model: { provider: 'openai-chat', name: 'palaver-demo-script', baseUrl: server.baseUrl, maxRetries: 0 },
    },
    tools: createDemoTools({ timeZone }),
    banner: [
      'DEMO MODE: replies come from a scripted model, not a real LLM.',
      'Try: "what time is it?", "remember: buy milk", "list my notes".',
      'For a real model: PALAVER_LLM_BASE_URL=<OpenAI-compatible /v1 URL> PALAVER_MODEL=<name> PALAVER_LLM_API_KEY=<key> npx palaver start',
    ].join('\n'),
  };
}
