export { configSchema, type PalaverConfig, type PalaverConfigInput, type ModelEndpointConfig } from './schema.js';
export { loadConfig, parseConfig, type LoadConfigOptions } from './load-config.js';
export { resolveConfigPaths, resolveDatabaseUrl } from './paths.js';
