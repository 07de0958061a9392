// Palaver's public entry point. Adapters with heavier dependencies have their own subpaths:
// `palaver/server` (HTTP + AG-UI), `palaver/store`, `palaver/models`, `palaver/mcp`, `palaver/testing`.

// Running an agent
export { createPalaver, type Palaver, type PalaverOptions, type ChatReply } from './app.js';
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
