/**
 * One `palaver worker` for the dispatch benchmark (bench/run.ts starts one or two): the worker of src/worker.ts with
 * two local tools, `echo` and the turn benchmark's `lookup`, under the key prefix the parent chose. Says `ready` over IPC once it reads; stops on
 * SIGTERM as `palaver worker` does.
 */
import { z } from 'zod';
import { silentLogger } from '../src/observability/logger.js';
import { defineTool } from '../src/tools/define-tool.js';
import { startToolWorker } from '../src/worker.js';
import { scenarioArgs } from './stats.js';
import { lookupTool } from './workload.js';

export interface DispatchWorkerArgs {
  readonly redisUrl: string;
  readonly keyPrefix: string;
}

const args = scenarioArgs<DispatchWorkerArgs>();
const echo = defineTool({ name: 'echo', description: 'Returns its text.', input: z.object({ text: z.string() }), run: ({ text }) => text });
const worker = await startToolWorker(
  { model: { name: 'bench' }, tools: { dispatch: 'streams' }, redis: { url: args.redisUrl, keyPrefix: args.keyPrefix }, log: { level: 'silent' } },
  { tools: [echo, lookupTool], logger: silentLogger() },
);
process.send?.({ type: 'ready', workerId: worker.workerId });
process.once('SIGTERM', () => {
  void worker.stop().then(() => process.exit(0));
});
