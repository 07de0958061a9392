import { createInterface } from 'node:readline';
import type { Channel, ConversationHandler, TurnEvent } from '../../domain/ports/channel.js';

export interface ConsoleChannelOptions {
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  /** The person's account id on this channel (default `local`). */
  readonly accountId?: string;
  /** The conversation key (default `console`): the same key continues the same history after a restart. */
  readonly conversationId?: string;
  /** Show which tools run (default true). */
  readonly showTools?: boolean;
  /**
   * Show each tool's result too (default false). Off, the person sees only the tool's name and whether it worked:
   * results can carry internal data, as on the web channel.
   */
  readonly showToolDetails?: boolean;
  /** Colour output (default: when the output is a TTY). */
  readonly color?: boolean;
}

const EXIT_COMMANDS = new Set(['/exit', '/quit']);

/**
 * A terminal chat: each line is a message, replies stream in as they are written. Ends on `/exit` or when the
 * input closes; `done` resolves then.
 */
export class ConsoleChannel implements Channel {
  readonly name = 'console';
  readonly capabilities = { streaming: true, maxMessageChars: null };
  readonly #options: ConsoleChannelOptions;
  #rl: ReturnType<typeof createInterface> | undefined;
  #finished!: () => void;
  /** Resolves when the person ended the chat. */
  readonly done = new Promise<void>((resolve) => (this.#finished = resolve));

  constructor(options: ConsoleChannelOptions) {
    this.#options = options;
  }

  async start(handler: ConversationHandler): Promise<void> {
    if (this.#rl) throw new Error('ConsoleChannel.start() was called twice; create one channel per chat');
    const color = this.#options.color ?? Boolean((this.#options.output as { isTTY?: boolean }).isTTY);
    const dim = (text: string) => (color ? `\x1b[2m${text}\x1b[0m` : text);
    const write = (text: string) => this.#options.output.write(text);
    const rl = createInterface({ input: this.#options.input, terminal: false });
    this.#rl = rl;
    write('you> ');
    // Lines are handled one at a time so replies never interleave.
    let queue = Promise.resolve();
    rl.on('line', (line) => {
      queue = queue.then(async () => {
        const text = line.trim();
        if (EXIT_COMMANDS.has(text)) {
          rl.close();
          return;
        }
        if (!text) {
          write('you> ');
          return;
        }
        let streamed = false;
        const onEvent = (event: TurnEvent) => {
          if (event.type === 'text_delta') {
            if (!streamed) write('bot> ');
            streamed = true;
            write(event.delta);
          } else if (event.type === 'tool_result' && this.#options.showTools !== false) {
            const detail = this.#options.showToolDetails ? ` → ${oneLine(event.content)}${event.isError ? ' (error)' : ''}` : event.isError ? ' ✗' : ' ✓';
            write(dim(`  · ${event.name}${detail}\n`));
          }
        };
        try {
          const outcome = await handler.handle(
            { channel: this.name, accountId: this.#options.accountId ?? 'local', conversationId: this.#options.conversationId ?? 'console', text },
            { onEvent },
          );
          if (outcome.status !== 'duplicate') write(streamed ? '\n' : `bot> ${outcome.reply}\n`);
        } catch (error) {
          write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
        }
        write('you> ');
      });
    });
    rl.on('close', () => void queue.then(() => this.#finished()));
  }

  async stop(): Promise<void> {
    this.#rl?.close();
  }
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
}
