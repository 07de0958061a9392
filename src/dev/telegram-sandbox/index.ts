export { startTelegramSandbox, type SandboxPerson, type TelegramSandbox, type TelegramSandboxOptions } from './telegram-sandbox.js';
export type { SandboxButton, SandboxEntity, SandboxEvent } from './timeline.js';
export type { SandboxUserAccount } from './user-account.js';
