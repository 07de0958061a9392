// A Palaver process for the crash tests: one memory channel `chat`, fed by stdin lines, on the database and model
// given in argv[2] (JSON). Prints `ready` once serving and `accepted <correlation id>` for each stored message.
import { createInterface } from 'node:readline';
import { MemoryChannel, createLogger, createPalaver } from './built-palaver.js';
import type { ReplyTarget, SendOptions } from '../../src/domain/ports/channel.js';

const { databaseUrl, modelUrl, instructionsDir, leaseMs, offline, blockSend, agent } = JSON.parse(process.argv[2]!) as {
  databaseUrl: string;
  modelUrl: string;
  instructionsDir: string;
  leaseMs: number;
  /** A messenger-like channel: replies go through the outbox, in parts of at most 40 characters. */
  offline?: boolean;
  /** The channel never finishes sending (the process is killed meanwhile). */
  blockSend?: boolean;
  /** More agent settings (agent.memory.summarize, say). */
  agent?: Record<string, unknown>;
};

/** Prints every part it is asked to send (and the delivery key it came with), so the parent can count deliveries. */
class ReportingChannel extends MemoryChannel {
  override async send(target: ReplyTarget, text: string, options?: SendOptions) {
    console.log(`key ${options?.deliveryKey ?? '-'} ${JSON.stringify(text)}`);
    console.log(`sending ${JSON.stringify(text)}`);
    if (blockSend) await new Promise(() => {});
    const receipt = await super.send(target, text);
    console.log(`sent ${JSON.stringify(text)}`);
    return receipt;
  }
}

const chat = offline
  ? new ReportingChannel({ name: 'chat', record: false, capabilities: { offlineDelivery: true, maxMessageChars: 40 } })
  : new MemoryChannel({ name: 'chat', record: false });
await createPalaver(
  {
    model: { name: 'scripted', baseUrl: modelUrl, maxRetries: 0, timeoutMs: 30_000 },
    database: { url: databaseUrl },
    agent: { instructionsDir, ...agent },
    channels: { web: { enabled: false } },
    inbox: { leaseMs },
  },
  { channels: [chat], logger: createLogger({ level: 'warn', destination: process.stderr }) },
);
console.log('ready');
createInterface({ input: process.stdin }).on('line', (line) => {
  void chat.say(line, { accountId: 'crash-tester', conversationId: 'crash-thread' }).then(
    (said) => console.log(`accepted ${said.correlationId}`),
    (error: unknown) => console.log(`refused ${(error as Error).message}`),
  );
});
