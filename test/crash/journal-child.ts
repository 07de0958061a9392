// A Palaver process for the turn journal's crash tests: one messenger-like memory channel `chat` (replies go through
// the outbox) and one local tool `book` that logs its side effect to a file, on the database and model given in
// argv[2] (JSON). Fed by stdin lines `<conversation> <text>`; prints `ready` once serving, `accepted <conversation>
// <text>` once a message is stored and `sent <text>` once the channel took a reply part (and `asked <approval id>`
// after it when that part is an approval question).
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { MemoryChannel, createLogger, createPalaver, defineTool } from './built-palaver.js';
import type { ReplyTarget, SendOptions } from '../../src/domain/ports/channel.js';

const { databaseUrl, modelUrl, instructionsDir, leaseMs, maxTurnAttempts, toolLog, holdSlot, toolDelayMs, agent, staged, readOnly, approval, clockAheadMs } =
  JSON.parse(process.argv[2]!) as {
    databaseUrl: string;
    modelUrl: string;
    instructionsDir: string;
    leaseMs: number;
    /** `inbox.maxTurnAttempts`: a turn taken over after a crash counts as an attempt. */
    maxTurnAttempts?: number;
    /** The file `book` appends `start <idempotency key> <slot>` and `done <idempotency key> <slot>` to. */
    toolLog: string;
    /** `book` never finishes for this slot (the process is killed while it runs). */
    holdSlot?: string;
    /** `book` takes up to this long (random), so a kill may land while it runs. */
    toolDelayMs?: number;
    /** More of the config's `agent` section (e.g. `flow: 'staged'`), and its `staged` section. */
    agent?: Record<string, unknown>;
    staged?: Record<string, unknown>;
    /** `book` is declared read-only (`LocalTool.readOnly`): its calls are recorded with their result only. */
    readOnly?: boolean;
    /** `book` runs only once this one said yes (`defineTool({ approval })`), described as `Book slot <slot>`. */
    approval?: 'person' | 'operator';
    /** This process's clock runs this far ahead (time that passed while no process ran). */
    clockAheadMs?: number;
  };

/**
 * The side effect, logged before and after: a key with a `done` line is an effect made; a `start` without a `done`
 * is a call the kill cut off while it ran.
 */
const book = defineTool({
  name: 'book',
  description: 'Books a slot',
  input: z.object({ slot: z.string() }),
  readOnly: readOnly === true,
  ...(approval ? { approval, describe: ({ slot }: { slot: string }) => `Book slot ${slot}` } : {}),
  run: async ({ slot }, ctx) => {
    appendFileSync(toolLog, `start ${ctx.idempotencyKey} ${slot}\n`);
    if (slot === holdSlot) await new Promise(() => {});
    if (toolDelayMs) await new Promise((resolve) => setTimeout(resolve, Math.random() * toolDelayMs));
    appendFileSync(toolLog, `done ${ctx.idempotencyKey} ${slot}\n`);
    return `booked ${slot}`;
  },
});

/** Prints every part it sends, so the parent can count deliveries. */
class ReportingChannel extends MemoryChannel {
  override async send(target: ReplyTarget, text: string, options?: SendOptions) {
    const receipt = await super.send(target, text);
    console.log(`sent ${text}`);
    if (options?.approval) console.log(`asked ${options.approval.id}`);
    return receipt;
  }
}

const chat = new ReportingChannel({ name: 'chat', record: false, capabilities: { offlineDelivery: true } });
await createPalaver(
  {
    model: { name: 'scripted', baseUrl: modelUrl, maxRetries: 0, timeoutMs: 30_000 },
    database: { url: databaseUrl },
    agent: { instructionsDir, ...agent },
    ...(staged ? { staged } : {}),
    channels: { web: { enabled: false } },
    inbox: { leaseMs, ...(maxTurnAttempts === undefined ? {} : { maxTurnAttempts }) },
  },
  {
    channels: [chat],
    tools: [book],
    logger: createLogger({ level: 'warn', destination: process.stderr }),
    ...(clockAheadMs ? { now: () => new Date(Date.now() + clockAheadMs) } : {}),
  },
);
console.log('ready');
createInterface({ input: process.stdin }).on('line', (line) => {
  const [conversation, ...words] = line.split(' ');
  const text = words.join(' ');
  // The text is the dedupe key: a message sent again to the next process after a kill is stored once.
  void chat.say(text, { accountId: conversation!, conversationId: conversation!, dedupeKey: text }).then(
    () => console.log(`accepted ${conversation} ${text}`),
    (error: unknown) => console.log(`refused ${(error as Error).message}`),
  );
});
