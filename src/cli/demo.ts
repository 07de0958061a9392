import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PalaverConfig, PalaverConfigInput } from '../config/index.js';
import { createDemoTools } from '../demo/demo-tools.js';
import { salonScript } from '../demo/salon-script.js';
import { createSalonTools } from '../demo/salon-tools.js';
import { PACKAGE_ROOT } from '../platform/package-root.js';
import { demoScript } from '../demo/demo-script.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../models/scripted/scripted-model-server.js';
import type { LocalTool } from '../tools/define-tool.js';

const DEMO_MODEL = 'palaver-demo-script';

/** The bundled demo: its scripted model server, config overrides and tools. */
export interface Demo {
  readonly server: ScriptedModelServer;
  readonly overrides: PalaverConfigInput;
  /** What the config file may set otherwise: the agent's name (a configured `agent.name` is kept). */
  readonly defaults: { readonly agent: { readonly name?: string | undefined } };
  /** The demo agent's tools, for the config loaded with `overrides` (the notes tools tell time in its time zone). */
  toolsFor(config: PalaverConfig): LocalTool[];
  /** Releases what the demo's tools hold. */
  close(): Promise<void>;
  /** What the person is talking to: the scripted model, or a real one named by PALAVER_* variables. */
  banner(config: PalaverConfig): string;
}

/** The demo agents `--demo <agent>` can pick. */
export const DEMO_AGENTS = ['notes', 'salon'] as const;
export type DemoAgent = (typeof DEMO_AGENTS)[number];

/** The scripted model costs nothing: priced by override, so the demo never loads the price table. */
const FREE_DEMO_MODEL = { [DEMO_MODEL]: { input: '0', output: '0' } };

export async function startDemo(agent: DemoAgent = 'notes'): Promise<Demo> {
  if (agent === 'salon') return startSalonDemo();
  const server = await startScriptedModelServer({ script: demoScript, models: [DEMO_MODEL] });
  return {
    server,
    defaults: { agent: { name: 'Palaver demo' } },
    overrides: {
      agent: { instructionsDir: join(PACKAGE_ROOT, 'examples', 'demo', 'instructions') },
      model: { provider: 'openai-chat', name: DEMO_MODEL, baseUrl: server.baseUrl, maxRetries: 0, prices: FREE_DEMO_MODEL },
    },
    toolsFor: (config) => createDemoTools({ timeZone: config.agent.timezone }),
    close: () => server.close(),
    banner: (config) =>
      [
        demoBanner(config),
        config.channels.telegram.enabled && config.channels.telegram.token
          ? 'Telegram: the demo agent answers your bot too (TELEGRAM_BOT_TOKEN); open the bot in Telegram and send /start.'
          : '',
      ]
        .filter(Boolean)
        .join('\n'),
  };

  function demoBanner(config: PalaverConfig): string {
    return config.model.baseUrl === server.baseUrl
      ? [
          'DEMO MODE: replies come from a scripted model, not a real LLM.',
          'Try: "what time is it?", "remember: buy milk", "list my notes".',
          'For a real model: PALAVER_LLM_BASE_URL=<OpenAI-compatible /v1 URL> PALAVER_MODEL=<name> PALAVER_LLM_API_KEY=<key> npm start -- --demo',
        ].join('\n')
      : `DEMO AGENT on a real model: ${config.model.name} at ${config.model.baseUrl ?? 'the OpenAI API'} (set by PALAVER_* variables).`;
  }
}

/**
 * The salon booking agent of `examples/salon`: its instructions, its stages and focus config, its tools over their
 * own SQLite file (`data/salon.db` in the working folder) and a scripted model that reads the hidden context.
 */
async function startSalonDemo(): Promise<Demo> {
  const dir = join(PACKAGE_ROOT, 'examples', 'salon');
  const example = JSON.parse(readFileSync(join(dir, 'salon.config.json'), 'utf8')) as {
    agent: NonNullable<PalaverConfigInput['agent']>;
    focus: PalaverConfigInput['focus'];
  };
  const { name, ...agent } = example.agent;
  const salon = createSalonTools({ file: join(process.cwd(), 'data', 'salon.db') });
  const server = await startScriptedModelServer({ script: salonScript, models: [DEMO_MODEL] });
  return {
    server,
    defaults: { agent: { name } },
    overrides: {
      agent: { ...agent, instructionsDir: join(dir, 'instructions') },
      focus: example.focus,
      model: { provider: 'openai-chat', name: DEMO_MODEL, baseUrl: server.baseUrl, maxRetries: 0, prices: FREE_DEMO_MODEL },
    },
    toolsFor: () => salon.tools,
    close: async () => {
      await server.close();
      salon.close();
    },
    banner: (config) =>
      config.model.baseUrl === server.baseUrl
        ? 'SALON DEMO: a scripted model. Try: "show my appointments", "cancel the haircut", "move the manicure to 2026-12-10 12:00".'
        : `SALON DEMO on a real model: ${config.model.name}.`,
  };
}
