export { startScriptedModelServer } from './scripted-model-server.js';
export type { ModelTiming, ScriptedModelServer, ScriptedModelServerOptions, TranscriptionCall, TranscriptionScript } from './scripted-model-server.js';
export { sequenceScript, textScript } from './scripted-model.js';
export type { ModelScript, ScriptedCall, ScriptedHostedMcpCall, ScriptedReply, ScriptedToolCall } from './scripted-model.js';
export { benchScript, demoScript } from './demo-script.js';
export { MemoryChannel, type MemoryChannelOptions, type MemoryReply, type Recorded, type Said, type SayOptions } from '../channels/memory/memory-channel.js';
export { startFakeTelegram, type FakeTelegram, type FakeReaction, type FakeSentMessage, type FakeUpdate, type FakeUser, type FakeCall } from './fake-telegram/index.js';
