import { createInterface, type Interface } from 'node:readline';
import type { ApprovalDecision, DeliveryApproval } from '../../domain/approval.js';
import { ChannelError, PalaverError } from '../../domain/errors.js';
import type {
  ApprovalOutcome,
  Channel,
  ChannelCapabilities,
  ChannelContext,
  ReplyTarget,
  SendOptions,
  SentPart,
  TurnEnd,
  TurnProgress,
} from '../../domain/ports/channel.js';
import { systemText, type SystemTextKey } from '../../i18n/index.js';
import { isReactionEmoji } from '../shared/reaction-emoji.js';
import { StreamedReply } from '../shared/streamed-reply.js';
import { cursorRow } from './terminal-rows.js';

export interface ConsoleChannelOptions {
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  /** The person's account id on this channel (default `local`). */
  readonly accountId?: string;
  /** The conversation key (default `console`): the same key continues the same history after a restart. */
  readonly conversationId?: string;
  /** Show a line for each tool call (default true). */
  readonly showTools?: boolean;
  /**
   * Show each tool's name and result (default false). Off, the person sees the tool's label ("Checking the
   * calendar…") and whether it worked, as on the web page: names and results can carry internal data.
   */
  readonly showToolDetails?: boolean;
  /**
   * Colour and cursor control (default: when the output is a TTY). With it, streamed text that turns out not to
   * be the reply is erased from the screen; without it, it is marked as withdrawn and the reply follows.
   */
  readonly color?: boolean;
  /** Terminal width, to erase streamed text that wrapped (default: the output's `columns`, else 80). */
  readonly columns?: number;
  /** More lines for `/help`, after the channel's own commands (the words that start afresh, say). */
  readonly help?: () => readonly string[];
}

const EXIT_COMMANDS = new Set(['/exit', '/quit']);
const HELP_COMMANDS = new Set(['/help', '/?']);
const PROMPT = 'you> ';
/** The prompt while a tool call waits for the person's yes or no; it ends like {@link PROMPT}. */
const APPROVAL_PROMPT = `[y/n] ${PROMPT}`;
/** The words that answer a question for approval at the prompt (any other line is a message, as usual). */
const APPROVAL_WORDS: ReadonlyMap<string, ApprovalDecision> = new Map([
  ...['y', 'yes', 'да', 'так', '是'].map((word) => [word, 'approved'] as const),
  ...['n', 'no', 'нет', 'ні', '否'].map((word) => [word, 'declined'] as const),
]);
const BOT = 'bot> ';
const TYPING = '… typing';
/** How often the pipeline renews typing; the line lasts a second longer, so it does not flicker. */
const TYPING_INTERVAL_MS = 4_000;
const TYPING_SHOWN_MS = TYPING_INTERVAL_MS + 1_000;
/** The person's recent lines, by message id, to name the one a reaction is on. */
const REMEMBERED_LINES = 50;
const QUOTE_CHARS = 30;
/** The line of a tool call whose event carries no label (a pipeline that does not resolve labels). */
const GENERIC_TOOL_LABEL = 'Working on it…';
/** Labels of tool calls still running, by call id; bounded, since a call whose result never comes stays. */
const REMEMBERED_CALLS = 100;

/**
 * A terminal chat: each input line is a message, replies stream in as they are written. Each sent part is its own
 * `bot> ` block; a reaction is a line of its own (`  ↳ 👍 on "the line"`); typing is a `… typing` status line that
 * the next output erases, shown only where the cursor can move back (with `color`), since a line that stays would
 * litter a piped transcript. Quoting (`SendOptions.replyTo`) is not shown: messages follow in order.
 *
 * One line at a time: the next line is handed to the pipeline only after the previous line's turn settled (lines
 * typed meanwhile wait), so every line is answered in turn and replies never interleave. A refused line prints
 * `error: <message>` and the chat goes on. Ends on `/exit` (or `/quit`) or when the input closes; `done` resolves
 * once the input closed and the last turn settled.
 *
 * A tool call that needs the person's approval asks with a part carrying `SendOptions.approval`: the question is
 * printed like any part, and the prompt becomes `[y/n] you> `. The next line that is a yes or a no (y, yes, n, no;
 * да/нет, так/ні, 是/否; any case) decides it through `ChannelContext.decideApproval` instead of being sent, the
 * outcome is printed on one line in the person's language, and the next prompt waits for the turn that goes on.
 * Any other line is sent as a message (the core reads the words too).
 *
 * @example
 * const chat = new ConsoleChannel({ input: process.stdin, output: process.stdout });
 * await palaver.addChannel(chat); await chat.done;
 */
export class ConsoleChannel implements Channel {
  readonly name = 'console';
  readonly capabilities: ChannelCapabilities;
  /** Resolves when the person ended the chat and the last turn settled. */
  readonly done: Promise<void>;
  readonly #options: ConsoleChannelOptions;
  readonly #conversationId: string;
  #finished!: () => void;
  #context: ChannelContext | undefined;
  #rl: Interface | undefined;
  readonly #lines: string[] = [];
  #busy = false;
  #inputClosed = false;
  #counter = 0;
  #parts = 0;
  /** The line whose turn is awaited: its message id, and what to call when its turn settled. */
  #awaiting: { readonly messageId: string; readonly settled: () => void } | undefined;
  readonly #reply = new StreamedReply();
  /** What was written since the streamed reply's `bot> `, to erase it. */
  #streamedScreen = '';
  #atLineStart = true;
  /** The `… typing` line is on screen (no line feed after it), and when it goes if not renewed. */
  #typingShown = false;
  #typingTimer: NodeJS.Timeout | undefined;
  readonly #lineTexts = new Map<string, string>();
  readonly #toolLabels = new Map<string, string>();
  /** The question for approval the next yes or no answers, if one was asked. */
  #approval: DeliveryApproval | undefined;

  constructor(options: ConsoleChannelOptions) {
    this.#options = options;
    this.capabilities = {
      maxMessageChars: null,
      streaming: true,
      typing: this.#color,
      typingIntervalMs: TYPING_INTERVAL_MS,
      reactions: true,
      readReceipts: false,
      approvalButtons: true,
    };
    this.#conversationId = options.conversationId ?? 'console';
    this.done = new Promise<void>((resolve) => (this.#finished = resolve));
  }

  async start(context: ChannelContext): Promise<void> {
    if (this.#context) throw new Error('ConsoleChannel.start() was called twice; create one channel per chat.');
    this.#context = context;
    const rl = createInterface({ input: this.#options.input, terminal: false });
    this.#rl = rl;
    this.#write(this.#prompt);
    rl.on('line', (line) => {
      this.#lines.push(line);
      this.#pump();
    });
    rl.on('close', () => {
      this.#inputClosed = true;
      this.#pump();
    });
  }

  /** Stops reading input; a line already handed over is still answered, then `done` resolves. Safe to call twice. */
  async stop(): Promise<void> {
    this.#lines.length = 0;
    this.#rl?.close();
  }

  progress(target: ReplyTarget, event: TurnProgress): void {
    if (target.conversationId !== this.#conversationId) return;
    switch (event.type) {
      case 'text_delta':
        if (event.delta === '') return;
        if (!this.#reply.isStreaming) {
          this.#endLine();
          this.#streamedScreen = '';
          this.#streamWrite(BOT);
        }
        this.#reply.append(event.delta);
        this.#streamWrite(event.delta);
        return;
      case 'tool_call':
        // Text before a tool call stays on screen; the reply is what streams after it.
        this.#endLine();
        this.#reply.reset();
        remember(this.#toolLabels, event.callId, event.label ?? GENERIC_TOOL_LABEL, REMEMBERED_CALLS);
        return;
      case 'tool_result': {
        const label = this.#toolLabels.get(event.callId) ?? GENERIC_TOOL_LABEL;
        this.#toolLabels.delete(event.callId);
        if (this.#options.showTools === false) return;
        this.#endLine();
        // The label is text for people; the name and result only with tool details (they can carry ids and data).
        const line = this.#options.showToolDetails
          ? `${event.name} → ${oneLine(event.content)}${event.isError ? ' (error)' : ''}`
          : `${oneLine(label)} ${event.isError ? '✗' : '✓'}`;
        this.#write(this.#dim(`  · ${line}\n`));
        return;
      }
      case 'discard':
        if (this.#reply.isStreaming) this.#withdraw();
        return;
    }
  }

  /**
   * Shows `… typing` on its own line until the next output, or for a few seconds unless renewed. Nothing while a
   * reply streams (its text shows the writing) or where the line could not be erased again.
   */
  async typing(target: ReplyTarget): Promise<void> {
    if (target.conversationId !== this.#conversationId || !this.#color) return;
    if (!this.#typingShown) {
      if (!this.#atLineStart || this.#reply.isStreaming) return;
      this.#options.output.write(this.#dim(TYPING));
      this.#typingShown = true;
    }
    clearTimeout(this.#typingTimer);
    this.#typingTimer = setTimeout(() => this.#clearTyping(), TYPING_SHOWN_MS);
    this.#typingTimer.unref();
  }

  /**
   * Prints the reaction as a line of its own, naming the person's line it is on.
   * @throws ChannelError `invalid_reaction` when `emoji` is not one emoji; nothing is printed then.
   */
  async react(target: ReplyTarget, messageId: string, emoji: string): Promise<void> {
    if (!isReactionEmoji(emoji))
      throw new ChannelError('invalid_reaction', this.name, `A reaction is one emoji; ${JSON.stringify(emoji.slice(0, 32))} is not shown.`);
    if (target.conversationId !== this.#conversationId) return;
    const line = this.#lineTexts.get(messageId);
    this.#endLine();
    this.#write(`  ↳ ${emoji} on ${line === undefined ? 'your message' : `"${quote(line)}"`}\n`);
  }

  /**
   * Prints one part as its own `bot> ` block (`options.replyTo` is not shown: a terminal has no quotes). A part that
   * asks for approval (`options.approval`) turns the prompt into `[y/n] you> ` until a yes or a no answers it.
   */
  async send(target: ReplyTarget, text: string, options?: SendOptions): Promise<SentPart> {
    const messageId = `${target.correlationId}:${++this.#parts}`;
    if (target.conversationId !== this.#conversationId) return { messageId };
    const match = this.#reply.match(text);
    if (match.kind === 'shown') {
      if (this.#reply.isComplete) this.#endLine();
    } else {
      if (match.kind === 'mismatch') {
        this.#withdraw();
        match.replay.forEach((part) => this.#line(part));
      }
      this.#line(text);
    }
    if (options?.approval !== undefined) {
      this.#approval = options.approval;
      // Asked outside a turn of a typed line (sent again after a restart): nothing else prompts for the answer.
      if (!this.#busy) this.#write(this.#prompt);
    }
    return { messageId };
  }

  settle(target: ReplyTarget, end: TurnEnd): void {
    if (target.conversationId !== this.#conversationId) return;
    if (this.#reply.hasUnsentText) {
      const replay = [...this.#reply.shownParts];
      this.#withdraw();
      replay.forEach((part) => this.#line(part));
    }
    this.#reply.reset();
    this.#clearTyping();
    this.#endLine();
    if (end.kind === 'error') this.#write(`error: ${errorText(end.error, end.correlationId)}\n`);
    const awaiting = this.#awaiting;
    if (awaiting && target.inReplyTo.includes(awaiting.messageId)) {
      this.#awaiting = undefined;
      awaiting.settled();
    }
  }

  /** Hands the next buffered line over, unless one is still being answered. */
  #pump(): void {
    if (this.#busy) return;
    const line = this.#lines.shift();
    if (line === undefined) {
      if (this.#inputClosed) this.#finished();
      return;
    }
    this.#busy = true;
    void this.#handle(line).finally(() => {
      this.#busy = false;
      this.#pump();
    });
  }

  async #handle(line: string): Promise<void> {
    const text = line.trim();
    if (EXIT_COMMANDS.has(text)) {
      await this.stop();
      return;
    }
    if (HELP_COMMANDS.has(text)) {
      // Answered here, never sent to the agent.
      const lines = ['/help         this list', '/exit, /quit  end the chat (the conversation is kept)', ...(this.#options.help?.() ?? [])];
      this.#write(`${lines.join('\n')}\n${this.#prompt}`);
      return;
    }
    if (text === '') {
      this.#write(this.#prompt);
      return;
    }
    const messageId = String(++this.#counter);
    this.#remember(messageId, text);
    const settled = new Promise<void>((resolve) => (this.#awaiting = { messageId, settled: resolve }));
    const approval = this.#approval;
    const decision = approval === undefined ? undefined : APPROVAL_WORDS.get(approvalWord(text));
    try {
      if (approval !== undefined && decision !== undefined) {
        // The answer to the question: a decision, not a message. The turn that goes on answers it by `messageId`.
        this.#approval = undefined;
        const accountId = this.#options.accountId ?? 'local';
        const outcome = await this.#context!.decideApproval(accountId, approval.id, decision, { messageId });
        this.#endLine();
        this.#write(this.#dim(`  · ${systemText(await this.#context!.interfaceLanguage(accountId), outcomeText(outcome))}\n`));
        if (outcome.kind === 'decided') await settled;
      } else {
        const acceptance = await this.#context!.accept({
          channel: this.name,
          accountId: this.#options.accountId ?? 'local',
          conversationId: this.#conversationId,
          text,
          messageId,
        });
        // A redelivery is answered elsewhere (or was already): nothing comes back for it here.
        if (acceptance.status === 'accepted') await settled;
      }
    } catch (error) {
      this.#endLine();
      this.#write(`error: ${errorText(error)}\n`);
    } finally {
      if (this.#awaiting?.messageId === messageId) this.#awaiting = undefined;
    }
    this.#write(this.#prompt);
  }

  /** The prompt for the next line: `[y/n] you> ` while a question for approval waits for its answer. */
  get #prompt(): string {
    return this.#approval === undefined ? PROMPT : APPROVAL_PROMPT;
  }

  #remember(messageId: string, text: string): void {
    remember(this.#lineTexts, messageId, text, REMEMBERED_LINES);
  }

  /** Erases the `… typing` line: the cursor goes back over it (not `\r`: the line may follow the prompt). */
  #clearTyping(): void {
    clearTimeout(this.#typingTimer);
    this.#typingTimer = undefined;
    if (!this.#typingShown) return;
    this.#typingShown = false;
    this.#options.output.write(`\x1b[${[...TYPING].length}D\x1b[J`);
  }

  /** One whole reply part on its own line. */
  #line(text: string): void {
    this.#endLine();
    this.#write(`${BOT}${text}\n`);
  }

  /** Takes the streamed reply text off the screen (or marks it withdrawn where the cursor cannot move). */
  #withdraw(): void {
    if (this.#color) {
      const up = cursorRow(this.#streamedScreen, this.#columns);
      this.#write(`\r${up > 0 ? `\x1b[${up}A` : ''}\x1b[J`);
      this.#atLineStart = true;
    } else {
      this.#endLine();
      this.#write('  · (withdrawn; the reply follows)\n');
    }
    this.#streamedScreen = '';
    this.#reply.reset();
  }

  #streamWrite(text: string): void {
    this.#streamedScreen += text;
    this.#write(text);
  }

  #endLine(): void {
    if (!this.#atLineStart) this.#write('\n');
  }

  #write(text: string): void {
    if (text === '') return;
    this.#clearTyping();
    this.#options.output.write(text);
    // After the prompt the person's Enter moves the cursor to a new line (a terminal echoes it).
    this.#atLineStart = text.endsWith('\n') || text.endsWith(PROMPT) || text.endsWith('\x1b[J');
  }

  get #color(): boolean {
    return this.#options.color ?? Boolean((this.#options.output as { isTTY?: boolean }).isTTY);
  }

  get #columns(): number {
    return this.#options.columns ?? (this.#options.output as { columns?: number }).columns ?? 80;
  }

  #dim(text: string): string {
    return this.#color ? `\x1b[2m${text}\x1b[0m` : text;
  }
}

/** A typed line as an answer word: lower case, without the full stop or exclamation mark after it. */
function approvalWord(text: string): string {
  return text
    .toLowerCase()
    .replace(/[.!。！]+$/u, '')
    .trim();
}

/** The line that tells the person what their yes or no came to. */
function outcomeText(outcome: ApprovalOutcome): SystemTextKey {
  switch (outcome.kind) {
    case 'decided':
      return outcome.status === 'approved' ? 'approval.approved' : 'approval.declined';
    case 'already':
      return 'approval.alreadyDecided';
    case 'expired':
      return 'approval.expired';
    case 'refused':
      return outcome.reason === 'operator' ? 'approval.byOperator' : 'approval.notYours';
    case 'not_found':
      return 'approval.unknown';
  }
}

/** Sets `key` in `map`, forgetting the oldest entries past `max`. */
function remember(map: Map<string, string>, key: string, value: string, max: number): void {
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}

function errorText(error: unknown, correlationId?: string): string {
  if (error instanceof PalaverError) return error.message;
  return `the agent could not answer because of an internal error${correlationId === undefined ? '' : ` (reference ${correlationId})`}`;
}

/** The start of the person's line, on one line and without control characters. */
function quote(text: string): string {
  const flat = text
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > QUOTE_CHARS ? `${flat.slice(0, QUOTE_CHARS - 1)}…` : flat;
}

/** On one line and without control characters: a tool's result must not move the cursor or recolour the screen. */
function oneLine(text: string): string {
  const flat = text
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
}
