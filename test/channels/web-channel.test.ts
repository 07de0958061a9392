import { WebChannel } from '../../src/channels/web/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer } from '../../src/server/index.js';
import { AguiView, readAguiEvents } from './agui-client.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';

/** A person using the web chat over real HTTP: each message is an AG-UI run, read as the page reads it. */
async function webDriver(): Promise<ChannelDriver> {
  const channel = new WebChannel({ maxInboundChars: 1000, logger: silentLogger(), webDir: false });
  const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), { host: '127.0.0.1', port: 0 });
  const views = new Map<string, AguiView>();
  const view = (name: string): AguiView => {
    const existing = views.get(name) ?? new AguiView();
    views.set(name, existing);
    return existing;
  };
  const reads: Promise<void>[] = [];
  let runs = 0;
  const post = async (name: string, text: string): Promise<void> => {
    const runId = `run-${++runs}`;
    const response = await fetch(`${server.url}/agui`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ threadId: `thread-${name}`, runId, messages: [{ id: `u-${runId}`, role: 'user', content: text }], tools: [], context: [], state: {}, forwardedProps: {} }),
    });
    if (!response.ok) {
      const body = (await response.json()) as { error: { message: string } };
      view(name).errors.push(body.error.message);
      return;
    }
    view(name).runs.set(runId, { events: [], ended: false });
    reads.push(readAguiEvents(response, (event) => view(name).apply(runId, event)).catch(() => undefined));
  };
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    conversationId: (name) => `thread-${name}`,
    say: post,
    replies: (name) => view(name).messages.map((m) => m.text),
    errors: (name) => view(name).errors,
    waiting: (name) => view(name).openRuns,
    sayAfterStop: post,
    close: async () => {
      await server.close();
      await Promise.all(reads);
    },
  };
}

runChannelContract('web (AG-UI over SSE)', webDriver);
