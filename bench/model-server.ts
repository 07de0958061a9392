/** The scripted model server alone, for diagnostics: prints (or sends over IPC) its base URL. */
import { benchScript, startScriptedModelServer } from '../src/testing/index.js';

const server = await startScriptedModelServer({ script: benchScript, maxRecordedCalls: 100, maxStoredResponses: 100 });
if (process.send) process.send(server.baseUrl);
else console.log(server.baseUrl);
