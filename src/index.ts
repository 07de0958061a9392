// Palaver's public entry point. Adapters with heavier dependencies have their own subpaths:
// `palaver/server` (HTTP + AG-UI), `palaver/store`, `palaver/models`, `palaver/mcp`, `palaver/testing`.
//
// Importing this file loads no adapter: the runtime (app.js and what it imports) loads when createPalaver is first
// called, and each adapter (model SDK, database engine, MCP SDK, web channel) when the config uses it. So
// `import { defineTool } from 'palaver'` in a tools module costs zod and little else. test/loading.test.ts holds it.

import type { Palaver, PalaverOptions } from './app.js';
import type { PalaverConfig, PalaverConfigInput } from './config/index.js';

// Running an agent
export type { Palaver, PalaverOptions, ChatReply } from './app.js';

/**
 * Creates a Palaver from a config object (validated here; see `palaver.config.json` in the README), opens the
 * database (running its migrations) and starts the channels. Adapters load only when the config uses them.
 * @throws ConfigError naming the invalid field.
 * @example
 * const palaver = await createPalaver({ model: { name: 'gpt-4.1-mini', apiKey } }, { tools: [myTool] });
 * const reply = await palaver.chat({ userId: 'alice', text: 'Hello' });
 * await palaver.close();
 */
export async function createPalaver(input: PalaverConfigInput | PalaverConfig, options?: PalaverOptions): Promise<Palaver> {
  const app = await import('./app.js');
  return app.createPalaver(input, options);
}
export { defineTool, type LocalTool } from './tools/define-tool.js';

// Configuration
export { loadConfig, parseConfig, configSchema, type LoadConfigOptions, type PalaverConfig, type PalaverConfigInput } from './config/index.js';

// Errors
export { PalaverError, ConfigError, ModelError, ToolError, ChannelError, StoreError, TurnError, type ModelFailure } from './domain/errors.js';

// Ports, for writing adapters
export type * from './domain/ports/index.js';
export type * from './domain/model.js';

// Channels that need no extra dependency
export { ConsoleChannel, type ConsoleChannelOptions } from './channels/console/console-channel.js';

// Observability
export { createLogger, silentLogger, type Logger, type LoggerOptions } from './observability/logger.js';
export { PalaverMetrics } from './observability/metrics.js';
