// Palaver as the package ships it (dist/, built by `npm test` and by the suite's global setup when src/ is newer), for
// the child processes the crash tests start and kill: loading src/ through tsx cost each start three times the CPU.
// Typed by the sources dist/ is built from.
const dist = (path: string) => new URL(`../../dist/${path}`, import.meta.url).href;

export const { createPalaver, createLogger, defineTool } = (await import(dist('index.js'))) as typeof import('../../src/index.js');
export const { MemoryChannel } = (await import(dist('channels/memory/memory-channel.js'))) as typeof import('../../src/channels/memory/memory-channel.js');
