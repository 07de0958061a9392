// The scripted model is a product part too (the offline demo runs on it); tests and embedders reach it here.
export { startScriptedModelServer } from '../models/scripted/scripted-model-server.js';
export type {
  ModelTiming,
  ScriptedModelServer,
  ScriptedModelServerOptions,
  TranscriptionCall,
  TranscriptionScript,
} from '../models/scripted/scripted-model-server.js';
export { sequenceScript, textScript } from '../models/scripted/scripted-model.js';
export type { ModelScript, ScriptedCall, ScriptedHostedMcpCall, ScriptedReply, ScriptedToolCall } from '../models/scripted/scripted-model.js';
export { demoScript } from '../demo/demo-script.js';
export { benchScript } from './bench-script.js';
export { MemoryChannel, type MemoryChannelOptions, type MemoryReply, type Recorded, type Said, type SayOptions } from '../channels/memory/memory-channel.js';
export {
  startFakeTelegram,
  type FakeTelegram,
  type FakeReaction,
  type FakeEdit,
  type FakeInlineKeyboard,
  type FakeSentMessage,
  type FakeUpdate,
  type FakeUser,
  type FakeCall,
} from './fake-telegram/index.js';
