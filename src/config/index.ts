export { configSchema, type PalaverConfig, type PalaverConfigInput, type ModelEndpointConfig } from './schema.js';
export { telegramUserEnabled } from '../channels/telegram-user/config.js';
export { loadConfig, parseConfig, type LoadConfigOptions } from './load-config.js';
export { resolveConfigPaths } from './paths.js';
export { normaliseDatabaseUrl, resolveDatabaseUrl, type NormalisedDatabaseUrl } from './database-url.js';
export { secretsOf } from './secrets.js';
export { adminConsoleSettings, type AdminConsoleOptions, type AdminConsoleSettings } from './admin-console.js';
