/**
 * Per-call cost of a tool call through `McpToolHost` (Streamable HTTP to the example logistics MCP server, which
 * bench/run.ts runs in its own process) against the floor: the same kind of call on an in-process `LocalToolHost`.
 * Run by bench/run.ts (parameters as JSON in argv[2]); reports over IPC.
 */
import { z } from 'zod';
import type { ToolCallContext, ToolHost } from '../src/domain/ports/tool-host.js';
import { defineTool } from '../src/tools/define-tool.js';
import { LocalToolHost } from '../src/tools/local-tool-host.js';
import { McpToolHost } from '../src/tools/mcp/mcp-tool-host.js';
import { profiled, report, runWorkers, scenarioArgs, scenarioResult } from './stats.js';

export interface McpScenarioArgs {
  readonly host: 'mcp' | 'local';
  readonly url: string;
  readonly token: string;
  readonly concurrency: number;
  readonly calls: number;
  readonly warmupCalls: number;
  readonly profileDir?: string;
}

const args = scenarioArgs<McpScenarioArgs>();

/** The local twin of the server's `get_user_cargoes`: same arguments, a result of the same shape. */
const localCargoes = defineTool({
  name: 'get_user_cargoes',
  description: "Lists the user's own cargoes.",
  input: z.object({ user_id: z.string() }),
  run: () => ({ cargoes: [] as unknown[] }),
});

const host: ToolHost =
  args.host === 'mcp'
    ? new McpToolHost({ name: 'logistics', url: args.url, bearerToken: args.token, userIdArgument: 'user_id' })
    : new LocalToolHost([localCargoes]);

const context = (userId: string, callId: string): ToolCallContext => ({
  userId,
  accounts: [{ channel: 'bench', accountId: userId }],
  sessionId: `session-${userId}`,
  conversationId: userId,
  correlationId: callId,
  callId,
  idempotencyKey: callId,
  signal: new AbortController().signal,
  role: null,
  setRole: () => {},
  getFlowState: () => undefined,
  setFlowState: () => {},
  handoff: () => {},
});

// The SDK transport hands one long-lived AbortSignal to every fetch, and undici adds an abort listener per request
// that only goes away when the request is garbage-collected; count the resulting warnings instead of printing
// each one (bench/run.ts starts this process with --no-warnings).
let listenerWarnings = 0;
let mostAbortListeners = 0;
process.on('warning', (warning) => {
  if (warning.name !== 'MaxListenersExceededWarning') return;
  listenerWarnings += 1;
  mostAbortListeners = Math.max(mostAbortListeners, Number(/(\d+) abort listeners/.exec(warning.message)?.[1] ?? 0));
});

let failed = 0;
const call = async (worker: number, index: number): Promise<void> => {
  const userId = `user-${worker}`;
  // McpToolHost fills user_id from the context; the local tool takes it as an argument.
  const callArgs = args.host === 'mcp' ? {} : { user_id: userId };
  const result = await host.call('get_user_cargoes', callArgs, context(userId, `call-${worker}-${index}`));
  if (result.isError) {
    failed += 1;
    if (failed <= 3) console.error(`[${args.host}] tool error: ${result.content}`);
  }
};

await host.list(); // connects (initialize) and caches the tool list, as a running Palaver would have
if (args.warmupCalls > 0) await runWorkers(Math.min(args.concurrency, args.warmupCalls), args.warmupCalls, call);
const run = await profiled(args.profileDir, `${args.host}-c${args.concurrency}-${process.pid}`, () => runWorkers(args.concurrency, args.calls, call));
await host.close();
report(scenarioResult(args.host, args.concurrency, run, { failed, listenerWarnings, mostAbortListeners }));
