import { SimpleHttpChannel } from '../../examples/minimal-channel/simple-http-channel.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp, startHttpServer } from '../../src/server/index.js';
import { runChannelContract, type ChannelDriver } from './channel-contract.js';

/** A client of the example channel: POST /simple to say, GET /simple to read the replies. */
async function simpleDriver(): Promise<ChannelDriver> {
  const channel = new SimpleHttpChannel();
  const server = await startHttpServer(createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes }), {
    host: '127.0.0.1',
    port: 0,
  });
  const errors = new Map<string, string[]>();
  const say = async (name: string, text: string): Promise<void> => {
    const response = await fetch(`${server.url}/simple`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ conversation: name, text }),
    });
    if (!response.ok) errors.set(name, [...(errors.get(name) ?? []), ((await response.json()) as { error: { message: string } }).error.message]);
  };
  const replies = async (name: string): Promise<string[]> => {
    const response = await fetch(`${server.url}/simple?conversation=${encodeURIComponent(name)}`);
    return ((await response.json()) as { replies: string[] }).replies;
  };
  return {
    channel,
    manyConversations: true,
    acceptsWhileAnswering: true,
    conversationId: (name) => name,
    say,
    replies,
    errors: (name) => errors.get(name) ?? [],
    waiting: () => 0,
    sayAfterStop: say,
    close: () => server.close(),
  };
}

runChannelContract('examples/minimal-channel (HTTP JSON)', simpleDriver);
