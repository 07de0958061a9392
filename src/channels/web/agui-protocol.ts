// The AG-UI side of the web channel, in one module the channel loads on its first request: the protocol's schemas
// and event types are not loaded by a Palaver that never serves the web (`palaver.chat()`, the terminal, a bot).

export { parseAguiInput, readCorrelationHeader, readLanguageHint } from './agui-input.js';
export { AguiStream } from './agui-stream.js';
